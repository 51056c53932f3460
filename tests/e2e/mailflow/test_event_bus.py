"""The mailbox event bus on RabbitMQ with the listeners in processes of their own.

Intake (SMTP, spooler) and the ``listeners`` role run as separate ``mailserver serve`` processes
over one keyspace and one RabbitMQ virtual host, as they would on separate machines. What the
listeners maintain (current quota, fast view) is compared with CQL and with a recomputation
from the messages themselves.
"""

from __future__ import annotations

import json
import smtplib
import threading
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pika
import pytest

from include.stack.manager import StackManager
from mailserver.blob.s3 import S3BlobStore, S3Config
from mailserver.domains.cassandra import CassandraDomainList
from mailserver.events.cassandra_dead_letters import CassandraEventDeadLetters
from mailserver.events.naming import RETRY_COUNT_HEADER, BusNames
from mailserver.events.publisher import ConfirmingPublisher
from mailserver.events.required_groups import aggregate_id
from mailserver.mailbox.listeners import CurrentQuotaUpdater, DeleteMessageListener, FastViewProjectionListener
from mailserver.mailbox.wiring import cassandra_context
from mailserver.model.address import Username
from mailserver.model.events import serialize_event
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import QuotaRoot
from mailserver.users.cassandra import CassandraUsersRepository
from tests.e2e.mailflow.conftest import eventually
from tests.support.events import sample_added
from tests.support.mailserver_process import (
    WEBADMIN_PASSWORD,
    IsolatedVhost,
    ServerProcess,
    mailet_container_for_tests,
    server_env,
)

pytestmark = pytest.mark.integration

INTAKE_ROLES = "smtp,spooler,outgoing"
QUOTA, FAST_VIEW = CurrentQuotaUpdater.group, FastViewProjectionListener.group
SERVER_GROUPS = {QUOTA, FAST_VIEW, DeleteMessageListener.group}


class ListenersProcess(ServerProcess):
    """``mailserver serve --roles listeners,webadmin``: ready once every role runs (lifecycle check)."""

    def ready(self) -> bool:
        url = self.webadmin_url + "/healthcheck/checks/" + urllib.parse.quote("Guice application lifecycle")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return json.load(response)["status"] == "healthy"
        except (OSError, ValueError, KeyError):
            return False

    def health(self, check: str) -> dict:
        url = self.webadmin_url + "/healthcheck/checks/" + urllib.parse.quote(check)
        request = urllib.request.Request(url, headers={"Password": WEBADMIN_PASSWORD})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            return json.load(error)


@dataclass
class BusWorld:
    env: dict[str, str]
    workdir: Path
    users: list[str]
    vhost: IsolatedVhost
    cassandra: object

    def intake(self) -> ServerProcess:
        env = {**self.env, "MAILSERVER_ROLES": INTAKE_ROLES}
        return ServerProcess(env, self.workdir / "intake.log").start()

    def listeners(self, **extra: str) -> ListenersProcess:
        env = {**self.env, "MAILSERVER_ROLES": "listeners,webadmin", "MAILSERVER_NODE_NAME": "listeners-node",
               **extra}
        return ListenersProcess(env, self.workdir / "listeners.log").start()

    def send(self, port: int, count: int, clients: int = 4) -> int:
        """Send ``count`` mails round-robin to the users; a failed transaction is sent again."""
        jobs = list(range(count))
        lock = threading.Lock()

        def run() -> None:
            client = None
            while True:
                with lock:
                    if not jobs:
                        break
                    n = jobs.pop()
                try:
                    if client is None:
                        client = smtplib.SMTP("127.0.0.1", port, timeout=30)
                    body = f"Subject: bus {n}\r\nMessage-ID: <{uuid.uuid4().hex}@bus.test>\r\n\r\nHello {n}\r\n"
                    client.sendmail("sender@remote.example", [self.users[n % len(self.users)]], body.encode())
                except (OSError, smtplib.SMTPException):
                    with lock:
                        jobs.append(n)
                    client = None
        threads = [threading.Thread(target=run, daemon=True) for _ in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(600)
        return count

    def manager(self):
        return cassandra_context(self.cassandra, S3BlobStore(S3Config.from_env(self.env))).manager  # type: ignore[arg-type]

    def messages(self) -> dict[str, list]:
        manager = self.manager()
        found = {}
        for user in self.users:
            path = MailboxPath.inbox(Username.of(user))
            found[user] = manager.get_messages(path) if manager.mailbox_exists(path) else []
        return found

    def recomputed_quota(self) -> dict[str, tuple[int, int]]:
        return {user: (len(ms), sum(m.size for m in ms)) for user, ms in self.messages().items()}

    def quota(self) -> dict[str, tuple[int, int]]:
        usage = {}
        for user in self.users:
            rows = self.cassandra.execute(  # type: ignore[attr-defined]
                "SELECT quotaType, currentValue FROM quotaCurrentValue WHERE identifier = ? "
                "AND quotaComponent = 'MAILBOX'", (QuotaRoot.for_user(Username.of(user)).as_string(),))
            values = {r["quotatype"]: r["currentvalue"] for r in rows}
            usage[user] = (values.get("count", 0), values.get("size", 0))
        return usage

    def fast_views(self) -> int:
        ids = [m.message_id.value for ms in self.messages().values() for m in ms]
        return sum(1 for i in ids if self.cassandra.one(  # type: ignore[attr-defined]
            "SELECT messageId FROM message_fast_view_projection WHERE messageId = ?", (i,)) is not None)

    def delivered(self) -> int:
        return sum(len(ms) for ms in self.messages().values())


@pytest.fixture
def bus_world(stack, cassandra, cassandra_config, tmp_path) -> Iterator[BusWorld]:
    tag = uuid.uuid4().hex[:8]
    container = mailet_container_for_tests(tmp_path / "mailetcontainer.yaml")
    with IsolatedVhost(stack, f"bus-{tag}") as vhost:
        env = server_env(stack, vhost.amqp_url, cassandra_config.keyspace, f"bus-{tag}", container)
        domain = f"bus-{tag}.test"
        domains = CassandraDomainList(cassandra)
        domains.add(domain)
        users = [f"user{i}@{domain}" for i in range(3)]
        repository = CassandraUsersRepository(cassandra, domains)
        for user in users:
            repository.add_user(Username.of(user), "pw")
        yield BusWorld(env, tmp_path, users, vhost, cassandra)


def test_mail_delivered_while_listeners_are_stopped_is_kept_and_the_projections_catch_up(bus_world: BusWorld):
    intake = bus_world.intake()
    try:
        bus_world.send(intake.smtp_port, 30)
        assert eventually(lambda: bus_world.delivered() == 30, timeout=120), intake.tail()
        # Nobody consumes the bus yet: the mail is in the mailboxes, the projections are not.
        assert set(bus_world.quota().values()) == {(0, 0)}
        assert bus_world.fast_views() == 0

        listeners = bus_world.listeners()
        try:
            expected = bus_world.recomputed_quota()
            assert eventually(lambda: bus_world.quota() == expected, timeout=120), (bus_world.quota(), expected)
            assert eventually(lambda: bus_world.fast_views() == 30, timeout=60), listeners.tail()
        finally:
            listeners.terminate()
    finally:
        intake.terminate()


def test_a_listener_process_killed_mid_event_handles_every_event_once_per_group(bus_world: BusWorld):
    intake, listeners = bus_world.intake(), bus_world.listeners()
    try:
        sender = threading.Thread(target=bus_world.send, args=(intake.smtp_port, 150), daemon=True)
        sender.start()
        # Kill while events are flowing: some counted, most not yet.
        assert eventually(lambda: 10 <= sum(c for c, _ in bus_world.quota().values()), timeout=120, interval=0.05)
        listeners.kill()
        sender.join(600)
        assert eventually(lambda: bus_world.delivered() == 150, timeout=300), intake.tail()

        listeners.start()
        expected = bus_world.recomputed_quota()
        assert eventually(lambda: bus_world.quota() == expected, timeout=180), (bus_world.quota(), expected)
        assert eventually(lambda: bus_world.fast_views() == 150, timeout=180), listeners.tail()
    finally:
        listeners.terminate()
        intake.terminate()


def bindings_of(stack, vhost: IsolatedVhost, names: BusNames, group: str) -> list:
    import base64
    token = base64.b64encode(f"{vhost.user}:{vhost.password}".encode()).decode()
    url = (stack.rabbitmq_management_url.rstrip("/") + "/api/exchanges/" + urllib.parse.quote(vhost.name, safe="")
           + "/" + urllib.parse.quote(names.retry_exchange(group), safe="") + "/bindings/source")
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": f"Basic {token}"})) as resp:
        return json.load(resp)


def queue_depth(vhost: IsolatedVhost, queue: str) -> int:
    connection = pika.BlockingConnection(pika.URLParameters(vhost.amqp_url))
    try:
        return connection.channel().queue_declare(queue, passive=True).method.message_count
    finally:
        connection.close()


def test_a_group_removed_from_configuration_is_unbound_kept_and_reported(bus_world: BusWorld, stack):
    names = BusNames()
    listeners = bus_world.listeners()
    listeners.terminate()
    # Retries waiting for the fast-view group while no node runs it.
    publisher = ConfirmingPublisher(bus_world.vhost.amqp_url)
    try:
        for _ in range(2):
            publisher.publish(names.retry_exchange(FAST_VIEW), "", serialize_event(sample_added()),
                              {RETRY_COUNT_HEADER: 1})
    finally:
        publisher.close()

    restarted = bus_world.listeners(MAILSERVER_LISTENER_GROUPS="ListeningCurrentQuotaUpdater,DeleteMessageListener")
    try:
        assert bindings_of(stack, bus_world.vhost, names, FAST_VIEW) == []          # unbound
        assert queue_depth(bus_world.vhost, names.work_queue(FAST_VIEW)) == 2      # kept, with its messages
        assert [b["destination"] for b in bindings_of(stack, bus_world.vhost, names, QUOTA)] == [
            names.work_queue(QUOTA)]
        # The management API's message counts lag a few seconds behind the queue.
        health = eventually(lambda: (h := restarted.health("RabbitMQEventBusGroups")) and "2 messages" in
                            h.get("cause", "") and h, timeout=30) or restarted.health("RabbitMQEventBusGroups")
        assert health["status"] == "degraded", health
        assert f"{FAST_VIEW} (2 messages)" in health["cause"], health

        rows = bus_world.cassandra.execute(  # type: ignore[attr-defined]
            "SELECT event FROM eventStore WHERE aggregateId = ?", (aggregate_id("mailboxEvent", bus_world.vhost.name),))
        audit = [json.loads(r["event"]) for r in rows]
        removed = {e["group"]: e for e in audit if e["type"] == "RequiredGroupRemoved"}
        # The groups left out of MAILSERVER_LISTENER_GROUPS (fast view, and search indexing when configured).
        assert FAST_VIEW in removed and QUOTA not in removed
        assert {e["host"] for e in removed.values()} == {"listeners-node"}
        assert all(e["date"].endswith("Z") for e in removed.values())
        assert {e["group"] for e in audit if e["type"] == "RequiredGroupAdded"} >= {QUOTA, FAST_VIEW}
    finally:
        restarted.terminate()


def test_rabbitmq_restarted_while_mail_flows_loses_no_event(bus_world: BusWorld, local_stack: StackManager):
    intake, listeners = bus_world.intake(), bus_world.listeners()
    try:
        sender = threading.Thread(target=bus_world.send, args=(intake.smtp_port, 120), daemon=True)
        sender.start()
        assert eventually(lambda: bus_world.delivered() >= 20, timeout=120)
        local_stack.down(["rabbitmq"])
        local_stack.up(["rabbitmq"])
        sender.join(600)
        assert eventually(lambda: bus_world.delivered() == 120, timeout=300), intake.tail()

        # Events whose publication failed during the restart wait in the dead letters: redeliver them.
        dead_letters = CassandraEventDeadLetters(bus_world.cassandra)  # type: ignore[arg-type]
        publisher = ConfirmingPublisher(bus_world.vhost.amqp_url)
        names = BusNames()
        redelivered = 0
        try:
            for group in set(dead_letters.groups()) & {names.dispatching_failure_group, *SERVER_GROUPS}:
                for letter in dead_letters.letters(group):
                    exchange = names.exchange if group == names.dispatching_failure_group \
                        else names.retry_exchange(group)
                    publisher.publish(exchange, "", letter.event_json, {RETRY_COUNT_HEADER: 0})
                    dead_letters.remove(group, letter.insertion_id)
                    redelivered += 1
        finally:
            publisher.close()
        print(f"\n[bus] dead letters redelivered after the RabbitMQ restart: {redelivered}")

        expected = bus_world.recomputed_quota()
        assert eventually(lambda: bus_world.quota() == expected, timeout=180), (bus_world.quota(), expected)
        assert eventually(lambda: bus_world.fast_views() == 120, timeout=60), listeners.tail()
    finally:
        listeners.terminate()
        intake.terminate()
