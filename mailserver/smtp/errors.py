"""Client errors per SMTP session: Postfix's ``smtpd_soft_error_limit`` and ``smtpd_hard_error_limit``.

A client that keeps getting errors is probing (address harvesting with unknown-user RCPTs,
password guessing) or broken; either way it should not get answers at full speed forever. As
Postfix's smtpd does:

* an error is a 4xx or 5xx reply to the client; the count starts again at 0 when a mail is
  accepted ("forgive any previous client errors when a message was received successfully");
* once ``soft`` errors were made, every further reply is sent ``sleep`` seconds late;
* once ``hard`` errors were made, the session gets ``421 4.7.0 <host> Error: too many errors``
  and is closed.

The delay is an ``asyncio.sleep`` of the session's own task: other sessions on the same event
loop keep being served while a slowed client waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

Sleep = Callable[[float], Awaitable[None]]


def too_many_errors(hostname: str) -> str:
    return f"421 4.7.0 {hostname} Error: too many errors"


def is_error(reply: str) -> bool:
    return reply[:1] in ("4", "5")


class SessionErrors:
    def __init__(self, soft: int | None, hard: int | None, sleep_time: float, sleep: Sleep = asyncio.sleep) -> None:
        self.soft = soft
        self.hard = hard
        self.sleep_time = sleep_time
        self._sleep = sleep
        self.count = 0

    async def pace(self) -> None:
        """Wait before a reply when the client has made ``soft`` errors or more."""
        if self.soft is not None and self.count >= self.soft and self.sleep_time > 0:
            await self._sleep(self.sleep_time)

    def record(self) -> bool:
        """Count one error; True when the session must now be ended."""
        self.count += 1
        return self.exhausted

    @property
    def exhausted(self) -> bool:
        return self.hard is not None and self.count >= self.hard

    def forgive(self) -> None:
        """A mail was accepted: the errors made so far no longer count."""
        self.count = 0
