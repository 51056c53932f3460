"""The background health monitor SMTP's back-pressure reads: slow rounds are not failures, a stuck
prober is, an unhealthy backend is."""

from __future__ import annotations

import threading
import time

from mailserver.observability.health import HealthCheck, Result, Status
from mailserver.runtime.health_monitor import HealthMonitor


class SlowCheck(HealthCheck):
    """Healthy, but every round after the first takes ``delay`` seconds (a backend just restarted)."""

    name = "Slow backend"

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.rounds = 0
        self.status = Status.HEALTHY

    def check(self) -> Result:
        self.rounds += 1
        if self.rounds > 1:
            time.sleep(self.delay)
        return Result(self.name, self.status, None if self.status is Status.HEALTHY else "down")


def healthy_throughout(monitor: HealthMonitor, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not monitor.healthy():
            return False
        time.sleep(0.02)
    return True


def test_rounds_slower_than_three_intervals_but_within_the_timeout_keep_accepting_mail():
    check = SlowCheck(delay=0.6)   # > 3 x 0.1 s interval, < the 2 s probe timeout
    monitor = HealthMonitor([check], interval=0.1, timeout=2.0).start()
    try:
        assert healthy_throughout(monitor, 2.0)
        assert check.rounds >= 3, "the monitor kept probing"
    finally:
        monitor.stop()


def test_an_unhealthy_backend_refuses_mail_and_its_recovery_accepts_it_again():
    check = SlowCheck(delay=0.0)
    monitor = HealthMonitor([check], interval=0.05, timeout=1.0).start()
    try:
        check.status = Status.UNHEALTHY
        deadline = time.monotonic() + 2
        while monitor.healthy() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not monitor.healthy()
        check.status = Status.HEALTHY
        deadline = time.monotonic() + 2
        while not monitor.healthy() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert monitor.healthy()
    finally:
        monitor.stop()


def test_a_stuck_prober_counts_as_unhealthy():
    release = threading.Event()

    class StuckCheck(HealthCheck):
        name = "Stuck backend"
        rounds = 0

        def check(self) -> Result:
            StuckCheck.rounds += 1
            if StuckCheck.rounds > 1:
                release.wait(10)   # hangs past the runner's timeout and the monitor's max age
            return self.healthy()

    monitor = HealthMonitor([StuckCheck()], interval=0.05, timeout=0.2).start()
    try:
        assert monitor.healthy()
        deadline = time.monotonic() + 3
        while monitor.healthy() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not monitor.healthy(), "a result older than 3 x interval + timeout must not count"
    finally:
        release.set()
        monitor.stop()
