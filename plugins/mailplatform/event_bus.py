"""Event-bus group reconciliation for Airflow tasks: the plan (pure), the broker steps, the report.

Required groups (the ``RequiredGroups-mailboxEvent`` aggregate in ``eventStore``, suffixed
``@<vhost>`` for a vhost other than ``/``: what the nodes run) are compared with the registered
groups (each group's work queue bound to its retry exchange, read through the management API) by
the server's own ``RegisteredGroups``:

* *missing*: required, not bound: their retries go nowhere. Bound (declared if needed);
* *unexpected*: bound, not required: a queue growing with nobody to consume it. Unbound; the
  queue and its messages stay (ADR 0026: "The queues should not be deleted");
* *orphans*: queues of groups that are not required. Reported with their depth; on request, their
  messages are moved to the event dead letters under their group (each stored, then acked: a
  kill in between stores it again on the next run, nothing is lost), and the queue is then
  deleted only if the broker finds it empty (``if-empty``), so a message that arrived meanwhile
  keeps it. A queue that still has consumers is left alone (a node still runs that group). A
  message that is not UTF-8 text cannot be an event: it is rejected to the bus's dead-letter
  queue (the queue's dead-letter exchange), as the bus does with undecodable bodies.

Counts of orphan queues come from AMQP (passive declare, exact), not from the management
statistics, which lag by a few seconds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger(__name__)

JOB = "reconcile-event-bus-groups"
COMPLETED, PARTIAL, DRY_RUN = "COMPLETED", "PARTIAL", "DRY_RUN"
IDLE_SECONDS = 1.0     # no delivery for this long: the queue is drained
PREFETCH = 50


@dataclass(frozen=True)
class Orphan:
    group: str
    queue: str
    messages: int
    consumers: int


@dataclass(frozen=True)
class GroupsPlan:
    required: list[str]
    registered: list[str]
    missing: list[str]
    unexpected: list[str]
    orphans: list[Orphan]

    def counts(self) -> dict[str, int]:
        return {"missingGroups": len(self.missing), "unexpectedGroups": len(self.unexpected),
                "orphanQueues": len(self.orphans),
                "orphanMessages": sum(o.messages for o in self.orphans)}

    @property
    def converged(self) -> bool:
        return not (self.missing or self.unexpected or self.orphans)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "counts": self.counts()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GroupsPlan:
        return cls(list(d["required"]), list(d["registered"]), list(d["missing"]), list(d["unexpected"]),
                   [Orphan(**o) for o in d["orphans"]])


@dataclass
class Actions:
    bound: list[str] = field(default_factory=list)
    unbound: list[str] = field(default_factory=list)
    moved: dict[str, int] = field(default_factory=dict)            # group -> messages now dead letters
    rejected: dict[str, int] = field(default_factory=dict)         # group -> non-text bodies sent to the DLQ
    deleted_queues: list[str] = field(default_factory=list)
    kept: list[dict[str, Any]] = field(default_factory=list)       # orphans left, with the reason

    def as_dict(self) -> dict[str, Any]:
        return {"bound": self.bound, "unbound": self.unbound, "movedToDeadLetters": self.moved,
                "rejectedToDeadLetterQueue": self.rejected, "deletedQueues": self.deleted_queues,
                "keptOrphans": self.kept}


# -- pure ------------------------------------------------------------------------------------------

def plan_of(state: Any, exact: Mapping[str, tuple[int, int]] | None = None) -> GroupsPlan:
    """Pure: the plan of a ``GroupsState``; ``exact`` (queue -> (messages, consumers)) overrides the
    management statistics for the orphans' depth."""
    from mailserver.events.naming import BusNames

    names = BusNames()
    orphans = []
    for q in state.orphans:
        queue = names.work_queue(q.group)
        messages, consumers = (exact or {}).get(queue, (q.messages, q.consumers))
        orphans.append(Orphan(q.group, queue, int(messages), int(consumers)))
    return GroupsPlan(sorted(state.required), sorted(state.registered), list(state.missing),
                      list(state.unexpected), orphans)


def why_not_move(orphan: Orphan) -> str | None:
    """Pure: the reason an orphan queue's messages must not be moved, or None."""
    if orphan.consumers:
        return (f"{orphan.consumers} consumer(s): a node still runs {orphan.group}; stop that listener or add the "
                "group to the configuration of every node")
    return None


class EmptyRequiredGroups(RuntimeError):
    """No group is required at all while some are bound: acting would unbind every listener."""


def check_not_blind(plan: GroupsPlan) -> None:
    """Pure: refuse to unbind every group because the aggregate is empty (never written by a node, or the
    Cassandra connection names another keyspace than the servers')."""
    if not plan.required and plan.unexpected:
        raise EmptyRequiredGroups(
            f"the required-groups aggregate is empty but {len(plan.unexpected)} group(s) are bound "
            f"({', '.join(plan.unexpected[:5])}): no node recorded its groups in this keyspace, or the Cassandra "
            "connection names another keyspace than the servers'. Nothing was changed; start a listeners node "
            "(it records its groups) or check the connection")


def outcome_of(dry_run: bool, move: bool, after: GroupsPlan, actions: Actions) -> tuple[str, list[str]]:
    """Pure: the run's outcome and what is left to do (empty when the broker matches what was asked)."""
    if dry_run:
        return DRY_RUN, []
    problems = [f"required group {g} is still not bound" for g in after.missing]
    problems += [f"group {g} is still bound though not required" for g in after.unexpected]
    if move:
        problems += [f"orphan queue {o.queue} still holds {o.messages} message(s)" +
                     (f" ({o.consumers} consumer(s))" if o.consumers else "") for o in after.orphans]
    problems += [f"orphan queue {k['queue']} kept: {k['reason']}" for k in actions.kept if move]
    return (PARTIAL if problems else COMPLETED), sorted(set(problems))


def build_report(*, run_key: str, dry_run: bool, move: bool, rate: float | None, before: GroupsPlan,
                 actions: Actions, after: GroupsPlan, audit: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """Pure: the JSON report (S3, XCom, audit counts)."""
    outcome, problems = outcome_of(dry_run, move, after, actions)
    return {"type": JOB, "timestamp": datetime.now(UTC).isoformat(), "runKey": run_key, "dryRun": dry_run,
            "runningOptions": {"moveOrphanMessagesToDeadLetters": move, "messagesPerSecond": rate},
            "requiredGroups": before.required, "registeredGroups": before.registered,
            "detected": before.counts(), "missing": before.missing, "unexpected": before.unexpected,
            "orphans": [asdict(o) for o in before.orphans], **actions.as_dict(),
            "remaining": after.counts(), "after": after.as_dict(), "problems": problems,
            "requiredGroupsAudit": list(audit)[-20:], "outcome": outcome}


# -- Cassandra -------------------------------------------------------------------------------------

@contextmanager
def cassandra_session(conn_id: str = "cassandra_default") -> Iterator[Any]:
    """The data layer's session on the keyspace the ``cassandra_default`` connection names."""
    from mailplatform.hooks.cassandra import CassandraHook
    from mailserver.cassandra.config import CassandraConfig
    from mailserver.cassandra.session import CassandraSession

    hook = CassandraHook(conn_id)
    hosts, port, keyspace = hook.settings()
    conn = hook.get_connection(conn_id)
    session = CassandraSession.connect(CassandraConfig(hosts=tuple(hosts), port=port, keyspace=keyspace,
                                                       username=conn.login or None, password=conn.password or None,
                                                       request_timeout=60.0))
    try:
        yield session
    finally:
        session.close()


def required_groups(session: Any, vhost: str, bus: str = "mailboxEvent") -> tuple[frozenset[str], list[dict[str, str]]]:
    """The required groups of the bus on that vhost (the servers keep one aggregate per bus and vhost) and
    the aggregate's audit trail (who added or removed which group, when)."""
    from mailserver.events.required_groups import RequiredGroups, aggregate_id
    from mailserver.eventsourcing.cassandra import CassandraEventStore

    aggregate = RequiredGroups(CassandraEventStore(session), aggregate_id(bus, vhost))
    return aggregate.current(), [asdict(c) for c in aggregate.audit()]


# -- the broker ------------------------------------------------------------------------------------

def exact_depths(amqp_url: str, queues: Sequence[str]) -> dict[str, tuple[int, int]]:
    """(ready messages, consumers) of each queue that exists, by passive declare."""
    import pika

    found: dict[str, tuple[int, int]] = {}
    if not queues:
        return found
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        channel = connection.channel()
        for queue in queues:
            try:
                ok = channel.queue_declare(queue, passive=True).method
                found[queue] = (ok.message_count, ok.consumer_count)
            except pika.exceptions.ChannelClosedByBroker as exc:
                if exc.reply_code != 404:
                    raise
                channel = connection.channel()
    finally:
        if connection.is_open:
            connection.close()
    return found


def broker_plan(hook: Any, required: frozenset[str]) -> GroupsPlan:
    """The plan as the broker is now: bindings and queues from the management API, depths from AMQP."""
    from mailserver.events.naming import BusNames
    from mailserver.events.registered_groups import RegisteredGroups

    state = RegisteredGroups(hook).state(required)
    queues = [BusNames().work_queue(q.group) for q in state.orphans]
    return plan_of(state, exact_depths(hook.amqp_url(), queues))


def move_to_dead_letters(amqp_url: str, queue: str, group: str, store: Callable[[str, str], Any], *,
                         rate: float | None = None, idle_seconds: float = IDLE_SECONDS,
                         prefetch: int = PREFETCH) -> tuple[int, int]:
    """Consume ``queue`` until idle: each text body is stored as a dead letter of ``group``, then acked;
    a body that is not UTF-8 is rejected (to the queue's dead-letter exchange). Returns (moved, rejected)."""
    import pika

    from spark_apps.common.throttle import RateLimiter

    limiter = RateLimiter(rate)
    moved = rejected = 0
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        channel = connection.channel()
        channel.basic_qos(prefetch_count=prefetch)
        for method, _properties, body in channel.consume(queue, auto_ack=False, inactivity_timeout=idle_seconds):
            if method is None or body is None:   # nothing delivered for idle_seconds: drained
                break
            tag = method.delivery_tag
            assert tag is not None   # pika sets it on every delivery
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                channel.basic_reject(tag, requeue=False)
                rejected += 1
                continue
            limiter.acquire()
            store(group, text)                      # the dead letter is written ...
            channel.basic_ack(tag)  # ... before the broker forgets the message
            moved += 1
        channel.cancel()   # prefetched but unprocessed messages go back to the queue
    finally:
        if connection.is_open:
            connection.close()
    return moved, rejected


def reconcile(hook: Any, session: Any, *, move: bool, rate: float | None,
              logger: logging.Logger = log) -> tuple[GroupsPlan, Actions]:
    """Bind the missing groups, unbind the unexpected ones, and (``move``) empty and delete the orphan queues.

    Acts on the broker as it is now (not on an earlier plan): returns that plan and what was done.
    """
    from mailserver.events.cassandra_dead_letters import CassandraEventDeadLetters
    from mailserver.events.topology import BusTopology

    required, _ = required_groups(session, hook.vhost)
    plan = broker_plan(hook, required)
    check_not_blind(plan)
    actions = Actions()
    from mailserver.settings import RabbitMQSettings

    # The queue type the nodes declare (same settings as theirs), or the broker refuses the group queues.
    topology = BusTopology(hook.amqp_url(), queue_type=RabbitMQSettings.from_env().queue_type())
    if plan.missing:
        topology.bind_groups(plan.missing)
        actions.bound = list(plan.missing)
        logger.info("bound the required groups %s", plan.missing)
    if plan.unexpected:
        topology.unbind_groups(plan.unexpected)     # queues and messages stay
        actions.unbound = list(plan.unexpected)
        logger.info("unbound the groups no node requires %s (their queues are kept)", plan.unexpected)
    if not move:
        return plan, actions
    dead_letters = CassandraEventDeadLetters(session)
    # Unbinding may have made more orphans than the plan saw (a bound queue of a group not required).
    orphans = broker_plan(hook, required).orphans
    for orphan in orphans:
        reason = why_not_move(orphan)
        if reason:
            actions.kept.append({**asdict(orphan), "reason": reason})
            logger.warning("orphan queue %s kept: %s", orphan.queue, reason)
            continue
        started = time.monotonic()
        moved, rejected = move_to_dead_letters(hook.amqp_url(), orphan.queue, orphan.group, dead_letters.store_json,
                                               rate=rate)
        actions.moved[orphan.group] = moved
        if rejected:
            actions.rejected[orphan.group] = rejected
        logger.info("orphan queue %s: %d message(s) stored as dead letters of %s, %d rejected, in %.1fs",
                    orphan.queue, moved, orphan.group, rejected, time.monotonic() - started)
        if hook.delete_queue_if_empty(orphan.queue):
            actions.deleted_queues.append(orphan.queue)
            logger.info("orphan queue %s deleted (it was empty)", orphan.queue)
        else:
            actions.kept.append({**asdict(orphan), "reason": "not empty when deleting (a message arrived): kept"})
    return plan, actions
