"""RemoteDelivery settings (James's mailet parameters), with James's ``delayTime`` syntax.

``delay_times`` is a comma list of ``[attempts*]duration``; a duration is a number with an
optional unit (no unit = milliseconds, as in James): ``"5000, 2*10m, 2h, 1d"``. ``max_retries``
is reconciled with the expanded list as James does: a longer list raises ``max_retries``, a
shorter one is padded by repeating its last delay.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta

from mailserver.model.james_units import InvalidDuration, parse_duration

_ATTEMPTS = re.compile(r"[0-9]+")
DEFAULT_DELAY = timedelta(hours=6)   # James: delay when the list is shorter than the retry count


def parse_delay_times(spec: str) -> list[timedelta]:
    """``"2*10m, 2h"`` -> [10m, 10m, 2h] (James's ``Delay``: a duration is James's DurationParser's,
    milliseconds by default); raises ValueError on a malformed item."""
    delays: list[timedelta] = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        count, _, duration = item.partition("*") if "*" in item else ("1", "", item)
        if "*" in duration:
            raise ValueError(f"invalid delay time {item!r}: expected [attempts*]duration[unit]")
        if not _ATTEMPTS.fullmatch(count.strip()) or int(count) < 1:
            raise ValueError(f"invalid attempt count in {item!r}")
        try:
            delay = parse_duration(duration.strip(), "ms")
        except InvalidDuration as exc:
            raise ValueError(f"invalid delay time {item!r}: {exc}") from None
        delays.extend([delay] * int(count))
    return delays


def reconcile(delays: list[timedelta], max_retries: int) -> tuple[list[timedelta], int]:
    """James's reconciliation of the delay list and ``maxRetries``."""
    if not delays:
        delays = [DEFAULT_DELAY]
    if len(delays) > max_retries:
        return list(delays), len(delays)
    return list(delays) + [delays[-1]] * (max_retries - len(delays)), max_retries


@dataclass(frozen=True)
class DeliveryConfig:
    delay_times: str = "21600000"            # James's default: 6 hours
    max_retries: int = 5
    helo_name: str = "localhost"
    connection_timeout: float = 60.0         # James ``connectiontimeout``
    timeout: float = 180.0                   # James ``timeout`` (each SMTP reply)
    start_tls: bool = True                   # upgrade when the server offers STARTTLS (certificates not verified)
    bounce_processor: str = "bounces"
    load_balancing: bool = True              # shuffle MX hosts of equal preference
    max_dns_problem_retries: int = 0         # a domain that does not exist bounces at once (James default)
    poll_seconds: float = 5.0                # one dequeue's wait between checks of the stop flag (stop() ends it)
    delays: list[timedelta] = field(init=False)
    retries: int = field(init=False)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        delays, retries = reconcile(parse_delay_times(self.delay_times), self.max_retries)
        object.__setattr__(self, "delays", delays)
        object.__setattr__(self, "retries", retries)

    def delay_for(self, retry_count: int) -> timedelta:
        """Delay before attempt ``retry_count + 1`` (``retry_count`` >= 1 after the first failure)."""
        index = retry_count - 1
        return self.delays[index] if 0 <= index < len(self.delays) else DEFAULT_DELAY
