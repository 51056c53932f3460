"""Mail on a three-node Cassandra (RF=3, QUORUM/SERIAL as in production) through the loss of nodes.

The mail server runs as a child process pointed at the three nodes (127.0.0.2 to 127.0.0.4 of the
stack's ``cassandra-cluster``), its keyspace created by its own schema code with
``NetworkTopologyStrategy`` and three replicas. Clients send as MTAs do (a mail not answered ``250``
is sent again later), and:

* one node is killed (``SIGKILL``) while mail flows: every mail still gets its ``250`` and is
  delivered, while the node is down;
* a second node is killed: no quorum is left, and a mail sent then is refused with a ``4xx`` (a
  ``250`` would mean the mail was stored on fewer replicas than a quorum) and leaves no copy;
* both nodes come back; the refused mail sent again is accepted, and stored from that SMTP session
  only; every accepted mail is in its INBOX;
* ``solve_message_inconsistencies`` runs across the cluster (LOCAL_QUORUM scans, SERIAL re-reads)
  and repairs what the fault seam broke and what the outage may have left; a second run finds
  nothing.

The keyspace stays on the cluster between runs (creating the 44 tables takes over a minute on three
nodes, each waiting for schema agreement): each run has a domain and users of its own.
"""

from __future__ import annotations

import os
import re
import signal
import smtplib
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from email.parser import BytesHeaderParser

import pytest

from include.stack import processes
from include.stack.services.cassandra_cluster import ADDRESSES, CassandraCluster, ClusterNode
from mailserver.blob.s3 import S3BlobStore, S3Config
from mailserver.cassandra.config import CassandraConfig
from mailserver.cassandra.session import CassandraSession
from mailserver.cassandra.versions import initialize_schema
from mailserver.domains.cassandra import CassandraDomainList
from mailserver.mailbox.wiring import cassandra_context
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from mailserver.users.cassandra import CassandraUsersRepository
from tests.e2e.mailflow.conftest import eventually
from tests.e2e.mailflow.test_crash_recovery import Sender
from tests.integration.maintenance.test_message_inconsistencies_job import break_messages, projection_equals_truth
from tests.support.mailserver_process import IsolatedVhost, ServerProcess, mailet_container_for_tests, server_env
from tests.support.maintenance import report_of, seed_mail, spark_submit
from tests.support.stack import service_for_the_block

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.cassandra_cluster, pytest.mark.cluster_suite]

KEYSPACE = "cluster_e2e"
BUCKET = "cluster-e2e"
REPLICATION = "NetworkTopologyStrategy:datacenter1=3"   # SimpleSnitch's data center
FIRST_KILLED, SECOND_KILLED, SURVIVOR = ADDRESSES   # the seed goes first: the driver loses its first contact
MAILS = 30
KILL_AFTER = 8   # accepted mails before the first kill: the rest flow with a node down
CLIENTS = 4
USERS = 4
JOB = "solve_message_inconsistencies"
REPAIR_COUNTERS = ("addedMessageIdEntries", "removedMessageIdEntries", "updatedMessageIdEntries")


@pytest.fixture(scope="module")
def cassandra_cluster(stack) -> Iterator[CassandraCluster]:
    """The stack's three-node cluster: started for this module when it is not running (then stopped),
    otherwise left as found (a node the test killed is started again)."""
    with service_for_the_block("cassandra-cluster", CassandraCluster) as cluster:
        yield cluster


@pytest.fixture
def cluster_keyspace(stack, cassandra_cluster: CassandraCluster) -> Iterator[CassandraSession]:
    """The test keyspace, created (when missing) by the server's own start-up schema code, at RF=3."""
    config = CassandraConfig.from_env({
        "CASSANDRA_HOSTS": cassandra_cluster.hosts, "CASSANDRA_PORT": str(stack.cassandra_port),
        "CASSANDRA_KEYSPACE": KEYSPACE, "CASSANDRA_REPLICATION": REPLICATION})
    initialize_schema(config)   # what `mailserver serve` does first; the server then finds it done
    session = CassandraSession.connect(config)
    try:
        yield session
    finally:
        session.close()


def kill(node: ClusterNode) -> None:
    pid = node.pid()
    assert pid, f"node {node.address} is not running"
    os.kill(pid, signal.SIGKILL)
    assert eventually(lambda: not processes.is_alive(pid), timeout=30), f"node {node.address} survived SIGKILL"


def send(sender: Sender, clients: int = CLIENTS) -> list[threading.Thread]:
    threads = [threading.Thread(target=sender.run, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    return threads


def finish(threads: list[threading.Thread], server: ServerProcess, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), f"clients did not get every mail accepted in time\n{server.tail()}"


def reply_to_one_mail(port: int, message_id: str, rcpt: str) -> tuple[int, str]:
    """The server's final answer to one mail sent once: 250, or the code that refused it."""
    try:
        with smtplib.SMTP("127.0.0.1", port, timeout=120) as client:
            client.ehlo("client.remote.example")
            Sender(port, []).transaction(client, message_id, rcpt)
        return 250, "accepted"
    except smtplib.SMTPResponseException as refusal:
        return refusal.smtp_code, refusal.smtp_error.decode(errors="replace")


class Laps:
    """Seconds each phase took, printed with the result (the lead budgets the suite's time from them)."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self.laps: dict[str, float] = {}

    def __call__(self, phase: str) -> None:
        now = time.monotonic()
        self.laps[phase], self.last = now - self.last, now

    def __str__(self) -> str:
        return ", ".join(f"{phase} {seconds:.0f}s" for phase, seconds in self.laps.items())


class Inboxes:
    """Each recipient's INBOX read back through the mailbox layer at QUORUM: Message-IDs and SMTP sessions."""

    def __init__(self, session: CassandraSession, env: dict[str, str], recipients: list[str]) -> None:
        self.manager = cassandra_context(session, S3BlobStore(S3Config.from_env(env))).manager
        self.recipients = recipients
        self.parser = BytesHeaderParser()

    def copies(self) -> tuple[Counter[str], Counter[tuple[str, str]]]:
        """Copies of each Message-ID, and of each (Message-ID, SMTP session id) pair."""
        found, transactions = Counter[str](), Counter[tuple[str, str]]()
        for address in self.recipients:
            path = MailboxPath.inbox(Username.of(address))
            if not self.manager.mailbox_exists(path):
                continue
            for metadata in self.manager.get_messages(path):
                headers = self.parser.parsebytes(self.manager.read_message(metadata.message_id))
                message_id = headers["Message-ID"].strip("<>")
                found[message_id] += 1
                session_id = re.search(r"\bID (\S+)", headers["Received"] or "")
                transactions[message_id, session_id.group(1) if session_id else ""] += 1
        return found, transactions

    def wait_for(self, expected: set[str], timeout: float = 180.0) -> Counter[str]:
        """Copies of each Message-ID once all of ``expected`` are stored, or when ``timeout`` runs out."""
        deadline = time.monotonic() + timeout
        found = self.copies()[0]
        while not set(found) >= expected and time.monotonic() < deadline:
            time.sleep(1.0)
            found = self.copies()[0]
        return found


def test_mail_survives_node_loss_quorum_refuses_below_it_and_the_repair_converges_across_the_cluster(
        stack, spark_env, cassandra_cluster: CassandraCluster, cluster_keyspace: CassandraSession, tmp_path_factory):
    session = cluster_keyspace
    tag = uuid.uuid4().hex[:8]
    workdir = tmp_path_factory.mktemp("cluster")
    cluster_endpoints = replace(stack, cassandra_hosts=cassandra_cluster.hosts)
    domain = f"cluster-{tag}.test"
    CassandraDomainList(session).add(domain)
    users = CassandraUsersRepository(session, CassandraDomainList(session))
    recipients = [f"user{i}@{domain}" for i in range(USERS)]
    for address in recipients:
        users.add_user(Username.of(address), "pw")
    container = mailet_container_for_tests(workdir / "mailetcontainer.yaml")
    first, second = cassandra_cluster.node(FIRST_KILLED), cassandra_cluster.node(SECOND_KILLED)

    with IsolatedVhost(stack, f"cluster-{tag}") as vhost:
        env = server_env(cluster_endpoints, vhost.amqp_url, KEYSPACE, BUCKET, container,
                         CASSANDRA_REPLICATION=REPLICATION)
        laps = Laps()
        server = ServerProcess(env, workdir / "server.log").start()
        laps("server start")
        try:
            inboxes = Inboxes(session, env, recipients)
            # Mail flows; the seed node is killed once KILL_AFTER mails are in.
            sender = Sender(server.smtp_port, [(f"{uuid.uuid4().hex}@cluster.test", recipients[i % USERS])
                                               for i in range(MAILS)])
            clients = send(sender)
            # Polled often: the intake is fast, and the kill must come while most of the mail is still to send.
            assert eventually(lambda: len(sender.accepted) >= KILL_AFTER, timeout=120, interval=0.01), server.tail()
            accepted_at_kill = len(sender.accepted)
            kill(first)
            finish(clients, server)
            laps("intake with a node killed")
            assert accepted_at_kill < MAILS, "every mail was in before the node went down: nothing flowed during it"
            assert len(sender.accepted) == MAILS
            found = inboxes.wait_for(sender.accepted)   # two nodes of three: QUORUM reads and writes go on
            laps("delivery")
            assert not sender.accepted - set(found), f"not delivered with one node down: {sender.accepted - set(found)}"

            # One node left: no quorum, so no 250.
            kill(second)
            refused_id, rcpt = f"{uuid.uuid4().hex}@cluster.test", recipients[0]
            code, reply = reply_to_one_mail(server.smtp_port, refused_id, rcpt)
            assert 400 <= code < 500, f"with one replica of three left the server answered {code} {reply}"
            assert server.process is not None and server.process.poll() is None, server.tail()
            laps("refusal below quorum")

            cassandra_cluster.ensure_started()
            cassandra_cluster.wait_ready()
            laps("two nodes back")
            resent = Sender(server.smtp_port, [(refused_id, rcpt)])
            finish(send(resent, clients=1), server)
            accepted = sender.accepted | resent.accepted
            inboxes.wait_for(accepted)
            laps("resend and delivery")
        finally:
            server.terminate()
    found, transactions = inboxes.copies()   # the server has stopped: no copy can come later

    missing = accepted - set(found)
    refused_sessions = {session_id for message_id, session_id in transactions if message_id == refused_id}
    # Not asserted: a delivery whose Cassandra write timed out while the node died, yet was applied,
    # can be stored again by its retry (the duplicate check reads at QUORUM and misses it). Shown here
    # until the delivery's de-duplication covers that case.
    twice = sorted(t for t, n in transactions.items() if n > 1)
    print(f"\n[cluster] {len(accepted)} mails accepted ({accepted_at_kill} before {FIRST_KILLED} was killed), "
          f"client retries {sum(1 for n in sender.attempts.values() if n > 1)}, refused below quorum: {code} {reply}; "
          f"SMTP transactions stored twice: {len(twice)} {twice[:3]}; {laps}")
    assert not missing, f"{len(missing)} accepted mails lost, e.g. {sorted(missing)[:3]}"
    assert len(refused_sessions) == 1, f"the mail refused below quorum was stored anyway: {refused_sessions}"

    # The repair across the three nodes: what the fault seam breaks, and whatever the outage left.
    seeded = seed_mail(session, users=1, mailboxes_per_user=2, messages_per_mailbox=3)
    break_messages(session, seeded, added=2, removed=1, outdated=1)
    args = ["--cassandra-hosts", cassandra_cluster.hosts, "--cassandra-port", str(stack.cassandra_port),
            "--keyspace", KEYSPACE]
    laps("seed and break")
    repair = spark_submit(JOB, args, spark_env)
    laps("repair run")
    assert repair.returncode == 0, repair.stderr[-4000:]
    report = report_of(repair.stdout)
    assert report["outcome"] == "COMPLETED", report
    assert (report["addedMessageIdEntries"] >= 2 and report["removedMessageIdEntries"] >= 1
            and report["updatedMessageIdEntries"] >= 1), report
    verify = spark_submit(JOB, args, spark_env)
    laps("second run")
    print(f"[cluster] {laps}")
    assert verify.returncode == 0, verify.stderr[-4000:]
    second_report = report_of(verify.stdout)
    assert {k: second_report[k] for k in REPAIR_COUNTERS} == dict.fromkeys(REPAIR_COUNTERS, 0), second_report
    projection_equals_truth(session)
