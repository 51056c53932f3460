"""First deliveries are handed on to the groups other nodes run (James's included), never dropped for them."""

from __future__ import annotations

from mailserver.events.api import EventListener
from mailserver.events.dead_letters import MemoryEventDeadLetters
from mailserver.events.naming import RETRY_COUNT_HEADER, BusNames
from mailserver.events.peer_groups import PeerGroups
from mailserver.events.publisher import PublishError
from mailserver.events.rabbitmq import RabbitMQEventBus
from mailserver.events.registered_groups import GroupQueue, GroupsState
from mailserver.model.address import Username
from mailserver.model.events import MailboxAdded, MailboxEvent, deserialize_events, serialize_event
from mailserver.model.ids import MailboxId
from mailserver.model.mailbox import MailboxPath

OURS = "org.apache.james.mailbox.store.quota.ListeningCurrentQuotaUpdater$ListeningCurrentQuotaUpdaterGroup"
JAMES_ONLY = "org.apache.james.mailbox.spamassassin.SpamAssassinListener$SpamAssassinListenerGroup"
OTHER_NODE = "org.apache.james.jmap.event.PopulateEmailQueryViewListener$PopulateEmailQueryViewListenerGroup"
NAMES = BusNames()
USER = Username.of("bob@example.org")


class Recording(EventListener):
    group = OURS

    def __init__(self) -> None:
        self.seen: list[MailboxEvent] = []

    def handle(self, event: MailboxEvent) -> None:
        self.seen.append(event)


class FakePublisher:
    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.refuse = refuse
        self.sent: list[tuple[str, str, dict]] = []

    def publish(self, exchange, routing_key, body, headers=None, *, mandatory=True) -> None:
        if exchange in self.refuse:
            raise PublishError(f"unroutable: {exchange}")
        self.sent.append((exchange, body if isinstance(body, str) else body.decode(), dict(headers or {})))


def bus_with(peers: frozenset[str] | None, publisher: FakePublisher) -> tuple[RabbitMQEventBus, Recording]:
    bus = RabbitMQEventBus("amqp://guest:guest@localhost:1/", MemoryEventDeadLetters(),
                           peer_groups=None if peers is None else (lambda: peers))
    bus.publisher = publisher   # type: ignore[assignment]
    listener = Recording()
    bus.register(listener)
    return bus, listener


def event() -> MailboxAdded:
    return MailboxAdded(user=USER, path=MailboxPath.inbox(USER), mailbox_id=MailboxId.generate())


def test_a_first_delivery_runs_local_groups_and_is_handed_on_to_each_group_run_elsewhere_only():
    publisher = FakePublisher()
    bus, listener = bus_with(frozenset({OURS, JAMES_ONLY, OTHER_NODE}), publisher)
    sent = event()

    bus.handle_delivery(serialize_event(sent).encode(), None, 0)

    assert [e.event_id for e in listener.seen] == [sent.event_id]
    assert sorted((exchange, headers[RETRY_COUNT_HEADER]) for exchange, _, headers in publisher.sent) == [
        (NAMES.retry_exchange(OTHER_NODE), 0), (NAMES.retry_exchange(JAMES_ONLY), 0)]
    assert all([e.event_id for e in deserialize_events(body)] == [sent.event_id] for _, body, _ in publisher.sent)


def test_a_retry_delivery_is_for_its_group_only_and_never_handed_on():
    publisher = FakePublisher()
    bus, listener = bus_with(frozenset({JAMES_ONLY}), publisher)

    bus.handle_delivery(serialize_event(event()).encode(), OURS, 1)

    assert len(listener.seen) == 1 and publisher.sent == []


def test_a_hand_on_that_cannot_be_routed_is_a_dead_letter_of_that_group():
    publisher = FakePublisher(refuse=frozenset({NAMES.retry_exchange(JAMES_ONLY)}))
    bus, _ = bus_with(frozenset({JAMES_ONLY}), publisher)
    sent = event()

    bus.handle_delivery(serialize_event(sent).encode(), None, 0)

    assert bus.dead_letters.groups() == [JAMES_ONLY]


def test_without_peer_groups_every_node_is_assumed_to_run_the_same_groups():
    publisher = FakePublisher()
    bus, listener = bus_with(None, publisher)

    bus.handle_delivery(serialize_event(event()).encode(), None, 0)

    assert len(listener.seen) == 1 and publisher.sent == [] and bus.groups_handed_on() == []


def test_peer_groups_join_their_sources_read_again_after_the_ttl_and_survive_a_failed_read():
    now, bound, reads = [0.0], [frozenset({JAMES_ONLY})], []

    def read_bound() -> frozenset[str]:
        reads.append(now[0])
        if isinstance(bound[0], Exception):
            raise bound[0]
        return bound[0]

    peers = PeerGroups(lambda: frozenset({OURS}), read_bound, ttl=30.0, clock=lambda: now[0])
    assert peers() == {OURS, JAMES_ONLY}
    bound[0] = frozenset({JAMES_ONLY, OTHER_NODE})
    now[0] = 10.0
    assert peers() == {OURS, JAMES_ONLY} and reads == [0.0]
    now[0] = 30.0
    assert peers() == {OURS, JAMES_ONLY, OTHER_NODE}
    bound[0] = RuntimeError("management API away")   # type: ignore[list-item]
    now[0] = 60.0
    assert peers() == {OURS, JAMES_ONLY, OTHER_NODE}


def test_a_group_bound_and_consumed_but_not_required_is_run_elsewhere_not_a_divergence():
    state = GroupsState(required=frozenset({OURS}), registered=frozenset({OURS, JAMES_ONLY, OTHER_NODE}),
                        queues=(GroupQueue(JAMES_ONLY, 0, 2), GroupQueue(OTHER_NODE, 4, 0)))

    assert state.run_elsewhere == [JAMES_ONLY]
    assert state.unexpected == [OTHER_NODE]
    assert [q.group for q in state.orphans] == [OTHER_NODE]
