"""The repair rate limiter, on a fake clock."""

from __future__ import annotations

import threading

import pytest

from spark_apps.common.throttle import RateLimiter, share


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


def test_rate_is_held_on_average():
    clock = FakeClock()
    limiter = RateLimiter(10, clock=clock, sleep=clock.sleep)
    for _ in range(110):
        limiter.acquire()
    # 10 tokens of burst, then 100 more at 10/s: ten seconds of waiting
    assert clock.now == pytest.approx(10.0, rel=0.01)


def test_unlimited_never_sleeps():
    clock = FakeClock()
    limiter = RateLimiter(None, clock=clock, sleep=clock.sleep)
    for _ in range(1000):
        limiter.acquire()
    assert clock.slept == 0


def test_idle_time_refills_only_up_to_the_burst():
    clock = FakeClock()
    limiter = RateLimiter(2, clock=clock, sleep=clock.sleep)
    clock.now = 100.0      # a long pause must not allow a burst of 200
    for _ in range(4):
        limiter.acquire()
    assert clock.slept == pytest.approx(1.0)


def test_threads_sharing_a_limiter_get_the_same_rate_as_one_caller():
    clock = FakeClock()   # the limiter's lock serializes the callers, and so the fake clock too
    limiter = RateLimiter(10, clock=clock, sleep=clock.sleep)
    threads = [threading.Thread(target=lambda: [limiter.acquire() for _ in range(11)]) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # 110 operations: 10 of burst, 100 at 10/s, exactly as from one thread
    assert clock.now == pytest.approx(10.0, rel=0.01)


def test_rate_is_shared_between_parallel_partitions():
    assert share(100, 4) == 25
    assert share(None, 4) is None
    with pytest.raises(ValueError):
        RateLimiter(0)


def test_a_batch_takes_as_many_tokens_as_it_has_operations():
    clock = FakeClock()
    limiter = RateLimiter(10, clock=clock, sleep=clock.sleep)
    limiter.acquire(10)        # the burst
    limiter.acquire(50)        # five seconds' worth at 10/s, beyond the burst: waited for whole
    assert clock.now == pytest.approx(5.0)
    for _ in range(3):
        limiter.acquire(20)
    # 120 operations in batches: 10 of burst, 110 at 10/s, as one at a time
    assert clock.now == pytest.approx(11.0)
    limiter.acquire(0)
    assert clock.now == pytest.approx(11.0)
