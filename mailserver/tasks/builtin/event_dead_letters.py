"""Event dead-letter redelivery tasks (James's ``event-dead-letters-redeliver-all``, ``-group``, ``-one``).

Each dead letter is published again through ``EventBus.redeliver`` (its group's retry path, or
every group for the dispatching-failure group) and removed only once that publish returned, so
an event is delivered at least once: a failed publish (or a failed removal) counts in
``failedRedeliveriesCount``, keeps the letter, and the task ends ``failed`` as James's PARTIAL
result does. A listener that fails again on the redelivered event makes a new dead letter.

``limit`` (James's ``RunningOptions``) caps the number of letters tried, successes and failures
alike; ``additionalInformation`` carries James's DTO fields, ``null`` where James has an empty
``Optional``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from mailserver.events.api import EventBus
from mailserver.events.dead_letters import DeadLetter, EventDeadLetters
from mailserver.tasks.api import Result, Task
from mailserver.tasks.registry import TaskRegistry

log = logging.getLogger(__name__)

REDELIVER_ALL = "event-dead-letters-redeliver-all"
REDELIVER_GROUP = "event-dead-letters-redeliver-group"
REDELIVER_ONE = "event-dead-letters-redeliver-one"


def groups_holding_letters(dead_letters: EventDeadLetters) -> list[str]:
    """James's ``groupsWithFailedEvents``: the group table may still name groups emptied since."""
    return [g for g in dead_letters.groups() if dead_letters.insertion_ids(g)]


class _RedeliveryTask(Task):
    """Counts and the redelivery loop shared by the three types."""

    dead_letters: EventDeadLetters
    bus: EventBus
    successful: int
    failed: int

    def _letters(self) -> Iterable[DeadLetter]:
        raise NotImplementedError

    def _limit(self) -> int | None:
        return None

    def run(self) -> Result:
        letters: Iterator[DeadLetter] = iter(self._letters())
        limit = self._limit()
        for letter in letters if limit is None else islice(letters, limit):
            if self.cancel_requested:
                break
            self._redeliver(letter)
        return Result.FAILED if self.failed else Result.COMPLETED

    def _redeliver(self, letter: DeadLetter) -> None:
        try:
            self.bus.redeliver(letter.group, letter.event_json)
            self.dead_letters.remove(letter.group, letter.insertion_id)   # only once published: at least once
        except Exception:  # counted and kept; the next letters are still tried, as James
            log.exception("redelivery of dead letter %s of group %s failed", letter.insertion_id, letter.group)
            self.failed += 1
            return
        self.successful += 1

    def _counts(self) -> dict[str, Any]:
        return {"successfulRedeliveriesCount": self.successful, "failedRedeliveriesCount": self.failed}


class EventDeadLettersRedeliverAllTask(_RedeliveryTask):
    type = REDELIVER_ALL

    def __init__(self, dead_letters: EventDeadLetters, bus: EventBus, limit: int | None = None) -> None:
        self.dead_letters, self.bus, self.limit = dead_letters, bus, limit
        self.successful = self.failed = 0

    def _letters(self) -> Iterable[DeadLetter]:
        for group in groups_holding_letters(self.dead_letters):
            yield from self.dead_letters.letters(group)

    def _limit(self) -> int | None:
        return self.limit

    def parameters(self) -> dict[str, Any]:
        return {"limit": self.limit}

    def additional_information(self) -> dict[str, Any]:
        return {**self._counts(), "group": None, "insertionId": None, "runningOptions": {"limit": self.limit}}


class EventDeadLettersRedeliverGroupTask(_RedeliveryTask):
    type = REDELIVER_GROUP

    def __init__(self, dead_letters: EventDeadLetters, bus: EventBus, group: str, limit: int | None = None) -> None:
        self.dead_letters, self.bus, self.group, self.limit = dead_letters, bus, group, limit
        self.successful = self.failed = 0

    def _letters(self) -> Iterable[DeadLetter]:
        return self.dead_letters.letters(self.group)

    def _limit(self) -> int | None:
        return self.limit

    def parameters(self) -> dict[str, Any]:
        return {"group": self.group, "limit": self.limit}

    def additional_information(self) -> dict[str, Any]:
        return {**self._counts(), "group": self.group, "insertionId": None, "runningOptions": {"limit": self.limit}}


class EventDeadLettersRedeliverOneTask(_RedeliveryTask):
    """An absent letter is not an error (James creates the task anyway): 0 redelivered, completed."""

    type = REDELIVER_ONE

    def __init__(self, dead_letters: EventDeadLetters, bus: EventBus, group: str, insertion_id: uuid.UUID) -> None:
        self.dead_letters, self.bus, self.group, self.insertion_id = dead_letters, bus, group, insertion_id
        self.successful = self.failed = 0

    def _letters(self) -> Iterable[DeadLetter]:
        letter = self.dead_letters.get(self.group, self.insertion_id)
        return [] if letter is None else [letter]

    def parameters(self) -> dict[str, Any]:
        return {"group": self.group, "insertionId": str(self.insertion_id)}

    def additional_information(self) -> dict[str, Any]:
        return {**self._counts(), "group": self.group, "insertionId": str(self.insertion_id)}


def register(registry: TaskRegistry, dead_letters: EventDeadLetters, bus: EventBus) -> None:
    registry.register(REDELIVER_ALL, lambda p: EventDeadLettersRedeliverAllTask(dead_letters, bus, p.get("limit")))
    registry.register(REDELIVER_GROUP, lambda p: EventDeadLettersRedeliverGroupTask(
        dead_letters, bus, p["group"], p.get("limit")))
    registry.register(REDELIVER_ONE, lambda p: EventDeadLettersRedeliverOneTask(
        dead_letters, bus, p["group"], uuid.UUID(p["insertionId"])))
