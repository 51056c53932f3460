"""The mailbox-counters repair of one mailbox: it recomputes at repair time (what changed since
the detection counts) and never brings back the counters of a deleted mailbox. The whole job
(counters, trusting the projection or not, dry run, verify pass) is shown through Airflow in
``tests/e2e/maintenance/test_recompute_mailbox_counters_dag.py``.
"""

from __future__ import annotations

import pytest

from mailserver.mailbox.cassandra_mailboxes import CassandraMailboxStore
from mailserver.mailbox.cassandra_messages import CassandraMessageStore
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.procedure import FIXED, SKIPPED
from spark_apps.jobs.recompute_mailbox_counters import OUTDATED, RecomputeMailboxCounters
from tests.support.counters_maintenance import (
    stored_counters,
)
from tests.support.maintenance import fail_once, metadata

pytestmark = [pytest.mark.integration, pytest.mark.spark]

JOB = "recompute_mailbox_counters"
WRITTEN = ("mailboxCounters", "imapUidTable", "messageIdTable", "mailbox")


def test_the_repair_recomputes_at_repair_time_and_applies_the_difference(stack, maintenance_keyspace):
    session = maintenance_keyspace
    store = CassandraMessageStore(session)
    mailbox = CassandraMailboxStore(session).create(MailboxPath.of(Username.of("bob@example.com"), "INBOX"), 42)
    endpoint = CqlEndpoint(stack.cassandra_hosts, stack.cassandra_port, session.keyspace)
    item = {"kind": OUTDATED, "mailboxid": str(mailbox.id.value)}
    for uid in (1, 2, 3):
        store.add(metadata(mailbox.id, uid, seen=uid == 1))
    fail_once(session, "mailboxCounters", "UPDATE", lambda: store.add(metadata(mailbox.id, 4)))
    # detected now; then more traffic before the repair: a correct append and a counter update lost again
    store.add(metadata(mailbox.id, 5, seen=True))
    fail_once(session, "mailboxCounters", "UPDATE", lambda: store.add(metadata(mailbox.id, 6)))
    assert stored_counters(session)[mailbox.id.value] == (4, 2)

    outcome = RecomputeMailboxCounters().repair(endpoint, item)
    assert outcome.status == FIXED
    assert (outcome.item["previousCount"], outcome.item["count"], outcome.item["unseen"]) == (4, 6, 4)
    assert stored_counters(session)[mailbox.id.value] == (6, 4)
    assert RecomputeMailboxCounters().repair(endpoint, item).status == SKIPPED   # right meanwhile

    CassandraMailboxStore(session).delete(mailbox)   # the mailbox row goes first; its messages are still listed
    session.execute("UPDATE mailboxCounters SET count = count + 1 WHERE mailboxId = ?", (mailbox.id.value,))
    assert RecomputeMailboxCounters().repair(endpoint, item).status == SKIPPED   # deleted mailbox: left alone
    assert stored_counters(session)[mailbox.id.value] == (7, 4)
    for m in store.list(mailbox.id):   # finish the deletion: the keyspace is left consistent
        store.delete(m)
    store.clear_mailbox_indexes(mailbox.id)
