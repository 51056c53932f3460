"""RabbitMQ object names of the distributed mail queue (James's, plus the delay extension)."""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFIX = "JamesMailQueue"
WORKQUEUE_PREFIX = f"{PREFIX}-workqueue-"
_NAME = re.compile(r"^[A-Za-z0-9._:@-]{1,180}$")


def validate_queue_name(name: str) -> str:
    """Letters, digits and ``. _ : @ -``, at most 180 characters (AMQP names stop at 255 bytes)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"invalid mail queue name {name!r}: use 1 to 180 letters, digits or . _ : @ -")
    return name


@dataclass(frozen=True)
class QueueNames:
    name: str

    @property
    def exchange(self) -> str:
        return f"{PREFIX}-exchange-{self.name}"

    @property
    def workqueue(self) -> str:
        return f"{WORKQUEUE_PREFIX}{self.name}"

    @property
    def dead_letter_exchange(self) -> str:
        return f"{PREFIX}-dead-letter-exchange-{self.name}"

    @property
    def dead_letter_queue(self) -> str:
        return f"{PREFIX}-dead-letter-queue-{self.name}"

    # -- extension (not in James): the delayer pattern, one TTL queue per delay ------------------
    @property
    def delay_exchange(self) -> str:
        return f"{PREFIX}-delay-exchange-{self.name}"

    @property
    def delay_queue_prefix(self) -> str:
        return f"{PREFIX}-delay-{self.name}-"

    def delay_queue(self, millis: int) -> str:
        return f"{self.delay_queue_prefix}{millis}"

    def delay_of(self, queue: str) -> int | None:
        """The delay (ms) of one of this mail queue's delay queues, None for any other queue."""
        if not queue.startswith(self.delay_queue_prefix):
            return None
        rest = queue[len(self.delay_queue_prefix):]
        return int(rest) if rest.isdigit() else None


def queue_name_of_workqueue(rabbit_queue: str) -> str | None:
    return rabbit_queue[len(WORKQUEUE_PREFIX):] if rabbit_queue.startswith(WORKQUEUE_PREFIX) else None
