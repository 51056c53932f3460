"""The redelivery job's pure parts: scope checks, what is in scope, where each group's events go, the report."""

from __future__ import annotations

import argparse
import uuid

import pytest

from mailserver.events.naming import EVENT_BUS_ID_HEADER, RETRY_COUNT_HEADER, BusNames
from spark_apps.jobs.redeliver_event_dead_letters import (
    REDELIVERED_PREFIX,
    RedeliverEventDeadLetters,
    check_scope,
    destination,
    group_report,
    in_scope,
    task_type,
)

pytestmark = pytest.mark.spark

QUOTA = "org.apache.james.mailbox.store.quota.ListeningCurrentQuotaUpdater$ListeningCurrentQuotaUpdaterGroup"
INDEX = "org.apache.james.mailbox.opensearch.events.OpenSearchListeningMessageSearchIndex$Group"
IDS = [str(uuid.uuid1()) for _ in range(4)]


def test_scope_companions_are_checked():
    check_scope("all", None, None)
    check_scope("group", QUOTA, None)
    check_scope("event", QUOTA, IDS[0])
    for scope, group, insertion_id, message in [
        ("everything", None, None, "scope must be one of"),
        ("group", None, None, "needs a group"),
        ("event", QUOTA, None, "needs an insertion id"),
        ("event", QUOTA, "not-a-uuid", "is not a UUID"),
        ("event", None, IDS[0], "needs a group"),
        ("all", QUOTA, None, "neither a group"),
        ("group", QUOTA, IDS[0], "takes no insertion id"),
    ]:
        with pytest.raises(ValueError, match=message):
            check_scope(scope, group, insertion_id)


def test_james_task_type_per_scope():
    assert [task_type(s) for s in ("all", "group", "event")] == [
        "event-dead-letters-redeliver-all", "event-dead-letters-redeliver-group", "event-dead-letters-redeliver-one"]


def test_a_real_run_needs_a_broker_a_dry_run_does_not(monkeypatch):
    monkeypatch.delenv("AMQP_URL", raising=False)
    args = argparse.Namespace(scope="group", group=QUOTA, insertion_id=None, bus="mailboxEvent", amqp_url=None,
                              dry_run=False)
    with pytest.raises(ValueError, match="no broker"):
        RedeliverEventDeadLetters().configure(args)
    args.dry_run = True
    procedure = RedeliverEventDeadLetters()
    assert procedure.configure(args) == {"scope": "group", "group": QUOTA, "insertionId": None}
    assert procedure.job == "event-dead-letters-redeliver-group"
    monkeypatch.setenv("AMQP_URL", "amqp://u:p@h:5672/v")
    args.dry_run = False
    procedure.configure(args)
    assert procedure.amqp_url == "amqp://u:p@h:5672/v"


def test_a_group_goes_back_to_its_retry_path_with_count_zero_a_dispatch_failure_to_every_group():
    names = BusNames()
    assert destination(QUOTA) == (f"mailboxEvent-retryExchange-{QUOTA}", {RETRY_COUNT_HEADER: 0})
    exchange, headers = destination(names.dispatching_failure_group)
    assert exchange == "mailboxEvent-exchange" and set(headers) == {EVENT_BUS_ID_HEADER}
    assert destination(QUOTA, "jmapEvent")[0] == f"jmapEvent-retryExchange-{QUOTA}"


def test_items_in_scope(spark):
    rows = [(QUOTA, IDS[0], "{}"), (QUOTA, IDS[1], "{}"), (INDEX, IDS[2], "{}"), (INDEX, None, None)]
    table = spark.createDataFrame(rows, "group string, insertionid string, event string")

    def items(scope, group=None, insertion_id=None):
        return sorted(tuple(r) for r in in_scope(table, scope, group, insertion_id).collect())

    assert items("all") == [(INDEX, INDEX, IDS[2]), (QUOTA, QUOTA, IDS[0]), (QUOTA, QUOTA, IDS[1])]
    assert items("group", QUOTA) == [(QUOTA, QUOTA, IDS[0]), (QUOTA, QUOTA, IDS[1])]
    assert items("event", QUOTA, IDS[1].upper()) == [(QUOTA, QUOTA, IDS[1])]
    assert items("event", INDEX, IDS[1]) == []        # that id is not in that group
    assert items("group", "nobody") == []


def test_report_per_group():
    counters = {REDELIVERED_PREFIX + QUOTA: 5, REDELIVERED_PREFIX + INDEX: 2, "skippedResolvedMeanwhile": 1}
    failures = [{"kind": INDEX, "group": INDEX, "insertionid": IDS[3], "error": "PublishError: unroutable"},
                {"kind": INDEX, "group": INDEX, "insertionid": IDS[2], "error": "PublishError: unroutable"}]
    assert group_report({QUOTA: 6, INDEX: 4}, counters, failures) == {
        INDEX: {"found": 4, "redelivered": 2, "failed": 2, "failedInsertionIds": sorted([IDS[2], IDS[3]])},
        QUOTA: {"found": 6, "redelivered": 5, "failed": 0, "failedInsertionIds": []}}
    # a resumed run: a group finished by an earlier attempt is found no more, its redeliveries still count
    assert group_report({}, {REDELIVERED_PREFIX + QUOTA: 3}, []) == {
        QUOTA: {"found": 0, "redelivered": 3, "failed": 0, "failedInsertionIds": []}}


def test_the_job_zip_carries_the_servers_publisher_for_executors(tmp_path):
    import zipfile

    from spark_apps.packaging import build_py_files

    names = set(zipfile.ZipFile(build_py_files(tmp_path)).namelist())
    assert {"mailserver/events/__init__.py", "mailserver/events/naming.py", "mailserver/events/publisher.py",
            "spark_apps/common/amqp.py", "spark_apps/jobs/redeliver_event_dead_letters.py"} <= names
