"""The fault seam recognises the target of a write statement and fails only what was asked."""

from __future__ import annotations

import pytest

from mailserver.cassandra.faults import FaultInjector, InjectedWriteFailure, statement_target


@pytest.mark.parametrize(("cql", "expected"), [
    ("INSERT INTO messageIdTable (mailboxId, uid) VALUES (?, ?)", ("INSERT", "messageidtable")),
    ("insert into ks.mailboxPathV3 (namespace) values (?) IF NOT EXISTS", ("INSERT", "mailboxpathv3")),
    ("UPDATE mailboxCounters SET count = count + 1 WHERE mailboxId = ?", ("UPDATE", "mailboxcounters")),
    ("DELETE FROM rrt WHERE user = ?", ("DELETE", "rrt")),
    ("DELETE userFlags FROM applicableFlag WHERE mailboxId = ?", ("DELETE", "applicableflag")),
    ("TRUNCATE mappings_sources", ("TRUNCATE", "mappings_sources")),
    ("SELECT * FROM rrt", None),
    ("CREATE TABLE x (a int PRIMARY KEY)", None),
])
def test_statement_target(cql, expected):
    assert statement_target(cql) == expected


def test_rule_fails_matching_writes_only_the_requested_number_of_times():
    faults = FaultInjector()
    faults.fail("messageIdTable", kind="INSERT", times=1)
    faults.check("SELECT * FROM messageIdTable")
    faults.check("INSERT INTO imapUidTable (a) VALUES (?)")
    faults.check("UPDATE messageIdTable SET a = ?")
    with pytest.raises(InjectedWriteFailure, match="messageIdTable"):
        faults.check("INSERT INTO messageIdTable (a) VALUES (?)")
    faults.check("INSERT INTO messageIdTable (a) VALUES (?)")  # only once


def test_contains_narrows_the_rule_and_clear_disarms():
    unseen = "UPDATE mailboxCounters SET unseen = unseen + 1 WHERE mailboxId = ?"
    faults = FaultInjector()
    faults.fail("mailboxCounters", contains="unseen", times=2)
    faults.check("UPDATE mailboxCounters SET count = count + 1 WHERE mailboxId = ?")   # same table, no "unseen"
    with pytest.raises(InjectedWriteFailure, match="mailboxCounters"):
        faults.check(unseen)
    faults.clear()
    faults.check(unseen)   # the second armed failure went with the rule
