"""``EventDeadLettersHealthCheck``: degraded while the event bus holds dead letters (as James).

A dead letter is an event a listener group failed to handle after its retries (the operator
redelivers them: ``/events/deadLetter``, or the redelivery DAG). James answers "contains
events" with one ``SELECT event ... LIMIT 1`` over the whole ``event_dead_letters`` table
(there is no "has dead letters" table): cheap whatever the number of groups or events.

It lives with the event bus, not in ``observability``: observability is a lower layer that knows
no bus; its health registry takes this check from whoever assembles the server.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from mailserver.observability.checks import EVENT_DEAD_LETTERS
from mailserver.observability.health import HealthCheck, Result

log = logging.getLogger(__name__)

# James's causes (EventDeadLettersHealthCheck.java).
CONTAIN_EVENTS = "EventDeadLetters contain events. This might indicate transient failure on event processing."
ERROR = "Error checking EventDeadLettersHealthCheck"

CONTAIN_EVENTS_CQL = "SELECT event FROM event_dead_letters LIMIT 1"


class EventDeadLettersHealthCheck(HealthCheck):
    """Degraded when any source holds a dead letter; unhealthy when a source cannot be read.

    Sources answer ``contain_events() -> bool``: the Cassandra table, and while the bus is
    in-process, that bus's own (per-process) dead letters.
    """

    name = EVENT_DEAD_LETTERS

    def __init__(self, *sources: Callable[[], bool]) -> None:
        if not sources:
            raise ValueError("EventDeadLettersHealthCheck needs at least one source of dead letters")
        self.sources = sources

    def check(self) -> Result:
        try:
            contain = any(source() for source in self.sources)
        except Exception as exc:
            log.warning("%s", ERROR, exc_info=True)
            return self.unhealthy(f"{ERROR}: {type(exc).__name__}: {exc}")
        return self.degraded(CONTAIN_EVENTS) if contain else self.healthy()
