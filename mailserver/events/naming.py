"""RabbitMQ names of an event bus, exactly as James declares them (james-runtime.md §3.2).

Since JAMES-3599 first deliveries go through one shared queue that every node consumes; the
per-group queues only receive retries, through the group's retry exchange. Keeping the strings
identical lets this bus share a broker with Java nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

MAILBOX_EVENT_BUS = "mailboxEvent"
JMAP_EVENT_BUS = "jmapEvent"   # James's JMAP bus: state changes to push connections
SHARED_GROUP = "org.apache.james.events.GroupRegistrationHandler$GroupRegistrationHandlerGroup"
DISPATCHING_FAILURE_GROUP_PREFIX = "org.apache.james.events.DispatchingFailureGroup-"
RETRY_COUNT_HEADER = "retry-count"
EVENT_BUS_ID_HEADER = "eventBusId"


@dataclass(frozen=True)
class BusNames:
    bus: str = MAILBOX_EVENT_BUS

    @property
    def exchange(self) -> str:
        return f"{self.bus}-exchange"

    @property
    def dead_letter_exchange(self) -> str:
        return f"{self.bus}-dead-letter-exchange"

    @property
    def dead_letter_queue(self) -> str:
        return f"{self.bus}-dead-letter-queue"

    @property
    def shared_queue(self) -> str:
        return self.work_queue(SHARED_GROUP)

    @property
    def dispatching_failure_group(self) -> str:
        """Events whose publication failed: redelivering them dispatches them to every group again."""
        return DISPATCHING_FAILURE_GROUP_PREFIX + self.bus

    def registration_queue(self, bus_id: str) -> str:
        """A node's key queue (``DefaultNamingStrategy.queueName``): its key listeners' events."""
        return f"{self.bus}-eventbus-{bus_id}"

    def work_queue(self, group: str) -> str:
        return f"{self.bus}-workQueue-{group}"

    def retry_exchange(self, group: str) -> str:
        return f"{self.bus}-retryExchange-{group}"

    def group_of_work_queue(self, queue: str) -> str | None:
        """The group whose queue this is, or None (the shared queue, or another bus's queue)."""
        prefix = f"{self.bus}-workQueue-"
        if not queue.startswith(prefix):
            return None
        group = queue[len(prefix):]
        return None if group == SHARED_GROUP else group

    def group_of_retry_exchange(self, exchange: str) -> str | None:
        prefix = f"{self.bus}-retryExchange-"
        return exchange[len(prefix):] if exchange.startswith(prefix) else None
