"""What ``mailserver rabbitmq migrate-queues`` re-declares: the queues the bus and the mail queues
declare, found from the names on the broker, and the temporary queue's name."""

from __future__ import annotations

import pika.exceptions
import pytest

from mailserver.cli import main
from mailserver.events.declarations import Queue, base_declarations, group_declarations
from mailserver.events.naming import BusNames
from mailserver.events.queue_specs import bus_queue_specs
from mailserver.events.topology import BusTopology, TopologyMismatch
from mailserver.queue.naming import QueueNames
from mailserver.queue.queue_specs import mail_queue_specs, mail_queues_specs
from mailserver.rabbitmq_migration import TEMPORARY_PREFIX, temporary_queue
from mailserver.rabbitmq_queues import BindingSpec, QueueType

BUS = BusNames()
QUORUM = QueueType(quorum=True, replication_factor=3, delivery_limit=5)


def test_bus_specs_are_the_declared_queues_present_on_the_broker():
    present = {BUS.dead_letter_queue, BUS.shared_queue, BUS.work_queue("Counters"), "JamesMailQueue-workqueue-spool"}
    declared = [d for d in base_declarations(BUS, QUORUM) + group_declarations(BUS, QUORUM, "Counters")
                if isinstance(d, Queue)]

    specs = bus_queue_specs(BUS, QUORUM, present)

    assert [(s.name, s.arguments, s.durable, s.exclusive, s.auto_delete) for s in specs] == [
        (q.name, q.arguments, q.durable, q.exclusive, q.auto_delete) for q in declared]


def test_bus_base_queues_keep_their_declared_bindings_and_group_queues_the_broker_s():
    specs = {s.name: s for s in bus_queue_specs(BUS, QueueType(), {BUS.shared_queue, BUS.work_queue("Counters")})}

    assert specs[BUS.shared_queue].bindings == (BindingSpec(BUS.exchange),)
    assert specs[BUS.work_queue("Counters")].bindings == ()   # bound only while a node requires the group


def test_mail_queue_specs_are_found_from_work_and_dead_letter_queues_but_not_delay_queues():
    spool, outgoing = QueueNames("spool"), QueueNames("outgoing")
    present = {spool.workqueue, spool.delay_queue(1000), outgoing.dead_letter_queue, BUS.shared_queue}

    specs = mail_queues_specs(QueueType(), present)

    assert [s.name for s in specs] == [outgoing.dead_letter_queue, spool.workqueue]
    assert specs[1].arguments == {"x-queue-version": 2, "x-dead-letter-exchange": spool.dead_letter_exchange}
    assert specs[1].bindings == (BindingSpec(spool.exchange),)


def test_mail_queue_dead_letter_queue_has_the_work_queue_s_arguments_but_its_dead_letter_exchange():
    spool = QueueNames("spool")
    work, dead_letters = mail_queue_specs(spool, QUORUM)

    assert work.arguments == {**dead_letters.arguments, "x-dead-letter-exchange": spool.dead_letter_exchange}
    assert dead_letters.arguments == QUORUM.arguments()


def test_a_temporary_queue_name_stays_within_amqp_s_255_bytes():
    long_name = BUS.work_queue("org.example." + "Listener" * 30)

    assert temporary_queue(BUS.shared_queue) == TEMPORARY_PREFIX + BUS.shared_queue
    assert len(temporary_queue(long_name).encode()) <= 255
    assert temporary_queue(long_name) != temporary_queue(long_name + "2")


class RefusingChannel:
    """Answers every declaration as a broker holding the queues with other arguments."""

    def exchange_declare(self, *args, **kwargs):
        pass

    def queue_declare(self, name, **kwargs):
        raise pika.exceptions.ChannelClosedByBroker(406, f"PRECONDITION_FAILED - inequivalent arg for queue '{name}'")


def test_the_bus_refused_by_the_broker_names_the_migration_command():
    with pytest.raises(TopologyMismatch, match="run `mailserver rabbitmq migrate-queues`"):
        BusTopology("amqp://guest:guest@127.0.0.1:1/%2F").declare_base(RefusingChannel())


def test_the_command_needs_both_rabbitmq_urls(monkeypatch, capsys):
    monkeypatch.delenv("RABBITMQ_MANAGEMENT_URL", raising=False)
    monkeypatch.setenv("AMQP_URL", "amqp://guest:guest@127.0.0.1:1/%2F")

    assert main(["rabbitmq", "migrate-queues"]) == 2
    assert "RABBITMQ_MANAGEMENT_URL" in capsys.readouterr().err


def test_an_unreachable_broker_is_reported_without_a_traceback(monkeypatch, capsys):
    monkeypatch.setenv("RABBITMQ_MANAGEMENT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("AMQP_URL", "amqp://guest:guest@127.0.0.1:1/%2F")

    assert main(["rabbitmq", "migrate-queues", "--apply"]) == 1
    assert "run the command again" in capsys.readouterr().err
