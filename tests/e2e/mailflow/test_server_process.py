"""A second ``mailserver serve`` process beside ``mail_world``'s, on the same keyspace and broker.

It runs SMTP, WebAdmin and JMAP but not the ``listeners`` role, so it consumes no listener group
of the mailbox bus: what reaches it from ``mail_world`` crosses RabbitMQ. One process serves the
module (started once): the harness's port retry is checked on its start, and JMAP push across
processes on its EventSource.
"""

from __future__ import annotations

import queue
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from jmapc import Client, Event, EventSourceConfig

from mailserver.events.naming import JMAP_EVENT_BUS, BusNames
from mailserver.events.registration_keys import account_key
from mailserver.jmap.account import account_id
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from mailserver.rabbitmq_management import RabbitMQManagement
from tests.e2e.mailflow.conftest import MailWorld, eventually
from tests.support.mailserver_process import ServerProcess
from tests.support.ports import unused_port

pytestmark = pytest.mark.integration

PASSWORD = "push-e2e-pw"


@dataclass
class SecondProcess:
    server: ServerProcess
    squatted_port: int   # the SMTP port first handed to it, taken by another socket before it bound it

    @property
    def jmap_host(self) -> str:
        return f"localhost:{self.server.env['MAILSERVER_JMAP_PORT']}"


@pytest.fixture(scope="module")
def second_process(mail_world: MailWorld, tmp_path_factory) -> Iterator[SecondProcess]:
    log = tmp_path_factory.mktemp("second-process") / "server.log"
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        env = {**mail_world.env, "MAILSERVER_ROLES": "smtp,webadmin,jmap", "MAILSERVER_SMTP_PORT": str(taken),
               "MAILSERVER_WEBADMIN_PORT": str(unused_port()), "MAILSERVER_JMAP_PORT": str(unused_port())}
        server = ServerProcess(env, log).start()
    try:
        yield SecondProcess(server, taken)
    finally:
        server.terminate()


def test_a_port_taken_before_the_server_binds_it_is_picked_again(second_process: SecondProcess):
    server = second_process.server
    assert server.smtp_port != second_process.squatted_port
    assert "address already in use" in server.log_path.read_text()
    with socket.create_connection(("127.0.0.1", server.smtp_port), timeout=10) as client:
        assert client.recv(3) == b"220"


def key_bound(mail_world: MailWorld, stack, routing_key: str) -> bool:
    """Whether a process's key queue is bound to the JMAP bus exchange for ``routing_key``."""
    exchange = BusNames(JMAP_EVENT_BUS).exchange
    with RabbitMQManagement(stack.rabbitmq_management_url, mail_world.env["AMQP_URL"]) as management:
        return any(b["source"] == exchange and b["routing_key"] == routing_key for b in management.bindings())


def test_an_event_source_of_another_process_is_pushed_the_state_of_a_mail_delivered_here(
        mail_world: MailWorld, second_process: SecondProcess, stack, monkeypatch):
    alice = mail_world.add_user("push-alice", PASSWORD)
    mail_world.backends.mailbox.manager.create_mailbox(MailboxPath.inbox(Username.of(alice)))
    # jmapc's EventSource client (sseclient) takes no ``verify``: the CA bundle comes from the environment.
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", mail_world.jmap_certificate)
    listening = Client.create_with_password(second_process.jmap_host, alice, PASSWORD,
                                            event_source_config=EventSourceConfig(types="Email", closeafter="state"))
    received: queue.Queue[Event] = queue.Queue()
    # sseclient reads without a timeout: a thread reads, the test waits on the queue with a deadline.
    threading.Thread(target=lambda: received.put(next(iter(listening.events))), daemon=True).start()
    key = account_key(Username.of(alice))
    assert eventually(lambda: key_bound(mail_world, stack, key.routing_key), timeout=30), second_process.server.tail()
    push_bus = mail_world.backends.push_bus
    assert push_bus is not None and key not in push_bus.key_listeners.keys(), "no listener of hers in this process"

    # Delivered by this process (its spooler and listener group); the state change reaches the other
    # process only through its key queue.
    mail_world.send("someone@sender.example", [alice], "Pushed across processes.", subject="cross-process push")

    event = received.get(timeout=60)
    assert list(event.data.changed) == [account_id(Username.of(alice))]
    assert event.data.changed[account_id(Username.of(alice))].email
