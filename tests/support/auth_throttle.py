"""The authentication throttle as the protocol tests run it: on a clock the test moves, its delays recorded
instead of waited."""

from __future__ import annotations

from mailserver.observability.metrics import Metrics
from mailserver.security.auth_throttle import AuthThrottle
from mailserver.security.throttle_config import AuthThrottleConfig
from tests.support.clock import ManualClock


def few_failures_config(window: float) -> AuthThrottleConfig:
    """Few failures to reach a refusal, since each costs a password hash (a fraction of a second on purpose):
    one free, then 0.5 s doubling up to 4 s (1 s for an account); an address refused after 5, after 3 on one
    account."""
    return AuthThrottleConfig(window=window, free_failures=1, delay=0.5, max_delay=4.0, account_max_delay=1.0,
                              address_limit=5, account_address_limit=3)


class RecordingThrottle:
    def __init__(self, config: AuthThrottleConfig) -> None:
        self.clock = ManualClock()
        self.delays: list[float] = []
        self.metrics = Metrics()
        self.auth_throttle = AuthThrottle(config, metrics=self.metrics, clock=self.clock, sleep=self._sleep)

    async def _sleep(self, seconds: float) -> None:
        self.delays.append(seconds)

    def meter(self, name: str) -> float:
        return self.metrics.meter(name).collect()[0].samples[0].value
