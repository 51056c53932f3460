"""Pure parts of the mail-queue jobs on tiny local DataFrames: the browse view as browse sees it, the
filters (the same answers as the server's remove filter), each job's selection, and the durations."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from mailserver.model.address import MailAddress
from mailserver.model.mail import Mail, MailContent
from mailserver.queue.api import RemoveField
from mailserver.queue.memory import matches
from spark_apps.common.mail_queues import (
    AddressFilter,
    MailFilters,
    enqueue_id_of,
    epoch_ms,
    job_duration,
    live_view_entries,
)
from spark_apps.jobs.drain_mail_queue import held_copy_id, matching_mails
from spark_apps.jobs.flush_delayed_mails import delayed_mails, verdict
from spark_apps.jobs.recover_lost_mails import RecoverLostMails, not_in_broker, referenced_blob_ids, unreferenced
from spark_apps.jobs.reprocess_mail_repository import repository_path, stored_mails

pytestmark = pytest.mark.spark

NOW = datetime(2026, 5, 2, 10, 30, tzinfo=UTC)
SLICE = NOW.replace(minute=0)
HOUR = timedelta(hours=1)
VIEW_SCHEMA = ("queuename string, timerangestart timestamp, bucketid int, enqueueid string, enqueuedtime timestamp, "
               "name string, sender string, recipients array<string>, attributes map<string, binary>")


def due(moment: datetime) -> dict[str, bytes]:
    value = moment.isoformat().replace("+00:00", "Z")
    return {"mailserver.queue.nextDelivery": ('{"serializer":"DateSerializer","value":"' + value + '"}').encode()}


def row(name, *, queue="spool", slice_=SLICE, at=None, sender="a@x.org", recipients=("b@y.org",),
        attributes=None, enqueue_id=None):
    return (queue, slice_, 0, enqueue_id or str(uuid.uuid4()), at or NOW - timedelta(minutes=5), name, sender,
            list(recipients), attributes)


@pytest.fixture
def view_of(spark):
    def build(rows, deleted=(), starts=None):
        view = spark.createDataFrame(rows, VIEW_SCHEMA)
        gone = spark.createDataFrame([(q, i) for q, i in deleted], "queuename string, enqueueid string")
        return live_view_entries(view, gone, starts or {"spool": epoch_ms(NOW.replace(minute=0))})
    return build


def test_durations_as_james_parses_them():
    assert job_duration("30m") == timedelta(minutes=30)
    assert job_duration("2h") == job_duration("2 hours") == 2 * HOUR
    assert job_duration("1d") == timedelta(days=1) and job_duration("90") == timedelta(seconds=90)
    assert job_duration("0s") == timedelta(0)
    for bad in ("", "soon", "3 fortnights", "-1h"):
        with pytest.raises(ValueError):
            job_duration(bad)


def test_live_entries_start_at_the_browse_start_and_drop_deleted_ones(view_of):
    kept, deleted = row("kept"), row("deleted")
    before = row("before", slice_=NOW.replace(minute=0) - HOUR)
    other = row("other queue", queue="outgoing")
    delayed = row("delayed", attributes=due(NOW + HOUR))
    live = view_of([kept, deleted, before, other, delayed], deleted=[("spool", deleted[3])])
    got = {r["name"]: r for r in live.collect()}
    assert set(got) == {"kept", "delayed"}
    assert got["delayed"]["nextdelivery_ms"] == epoch_ms(NOW + HOUR)
    assert got["kept"]["nextdelivery_ms"] is None
    assert got["kept"]["enqueuedtime_ms"] == epoch_ms(NOW - timedelta(minutes=5))
    assert got["kept"]["timerangestart_ms"] == epoch_ms(NOW.replace(minute=0))


@pytest.mark.parametrize(("field", "value"), [
    (RemoveField.SENDER, "spammer@bad.example"), (RemoveField.SENDER, "SPAMMER@BAD.EXAMPLE"),
    (RemoveField.RECIPIENT, "victim@y.org"), (RemoveField.NAME, "mail-2"), (RemoveField.SENDER, "nobody@x.org"),
])
def test_filters_select_what_the_servers_remove_filter_selects(spark, field, value):
    mails = [("mail-1", "spammer@bad.example", ["victim@y.org"]), ("mail-2", "friend@x.org", ["b@y.org"]),
             ("mail-3", None, ["victim@y.org", "c@y.org"])]
    expected = {name for name, sender, rcpts in mails if matches(Mail(
        name=name, sender=MailAddress.of(sender) if sender else None, recipients=[MailAddress.of(r) for r in rcpts],
        content=MailContent.of_bytes(b"x")), field, value)}
    filters = MailFilters.parse(**{field.value: value})
    df = spark.createDataFrame([(n, s, r, 0) for n, s, r in mails],
                               "name string, sender string, recipients array<string>, time_ms long")
    assert {r["name"] for r in df.filter(filters.condition(epoch_ms(NOW))).collect()} == expected
    assert {n for n, s, r in mails if filters.matches(sender=s, recipients=r, name=n, time=NOW, now=NOW)} == expected


def test_filters_combine_and_accept_a_domain(spark):
    filters = MailFilters.parse(sender="*@Bad.Example", recipient="*@y.org", older_than="1h")
    mails = [("old-spam", "s1@bad.example", ["v@y.org"], epoch_ms(NOW - 2 * HOUR)),
             ("new-spam", "s2@bad.example", ["v@y.org"], epoch_ms(NOW - timedelta(minutes=10))),
             ("old-other-rcpt", "s3@bad.example", ["v@z.org"], epoch_ms(NOW - 2 * HOUR)),
             ("old-ham", "friend@x.org", ["v@y.org"], epoch_ms(NOW - 2 * HOUR))]
    df = spark.createDataFrame(mails, "name string, sender string, recipients array<string>, time_ms long")
    assert [r["name"] for r in df.filter(filters.condition(epoch_ms(NOW))).collect()] == ["old-spam"]
    assert filters.as_options() == {"sender": "*@bad.example", "recipient": "*@y.org", "name": None,
                                    "olderThan": "3600s"}
    assert MailFilters().empty and not filters.empty
    with pytest.raises(ValueError, match="invalid address filter"):
        AddressFilter.parse("not an address")


def test_drain_selection_and_hold_leaves_delayed_mails_out(view_of):
    live = view_of([row("spam-1", sender="s@bad.example"), row("ham", sender="f@x.org"),
                    row("spam-held", sender="s@bad.example", attributes=due(NOW + HOUR)),
                    row("spam-due", sender="s@bad.example", attributes=due(NOW - HOUR))])
    filters = MailFilters.parse(sender="s@bad.example")
    moved = {r["name"] for r in matching_mails(live, filters, epoch_ms(NOW), "move").collect()}
    held = {r["name"] for r in matching_mails(live, filters, epoch_ms(NOW), "hold").collect()}
    assert moved == {"spam-1", "spam-held", "spam-due"}
    assert held == {"spam-1", "spam-due"}
    item = matching_mails(live, filters, epoch_ms(NOW), "delete").first().asDict()
    assert set(item) == {"kind", "queuename", "enqueueid", "timerangestart_ms", "bucketid", "name", "sender",
                         "enqueuedtime_ms"} and item["kind"] == "matchingMail"


def test_held_copies_have_one_id_per_original():
    original = uuid.uuid4()
    assert held_copy_id(original) == held_copy_id(str(original)) != held_copy_id(uuid.uuid4())


def test_flush_selection_and_verdict(view_of):
    live = view_of([row("waiting", attributes=due(NOW + HOUR)), row("due", attributes=due(NOW - HOUR)),
                    row("plain")])
    assert [r["name"] for r in delayed_mails(live, epoch_ms(NOW)).collect()] == ["waiting"]
    started = epoch_ms(NOW)
    assert verdict([{"enqueuedtime_ms": started - 1}, {"enqueuedtime_ms": started + 5}], started) == (1, 1)
    assert verdict([], started) == (0, 0)


def test_reprocess_selection(spark):
    url = "cassandra://var/mail/error/"
    keys = spark.createDataFrame([(url, "k1"), (url, "k2"), (url, "k3"), (url, "orphan-key"),
                                  ("cassandra://var/mail/other/", "k9")], "name string, mailkey string")
    contents = spark.createDataFrame([
        (url, "k1", "a@x.org", ["u@local.test"], NOW - 3 * HOUR),
        (url, "k2", "a@x.org", ["v@local.test"], NOW - 2 * HOUR),
        (url, "k3", "b@x.org", ["u@local.test"], NOW - HOUR),
        ("cassandra://var/mail/other/", "k9", "a@x.org", ["u@local.test"], NOW - HOUR),
    ], "name string, mailkey string, sender string, recipients array<string>, lastupdated timestamp")
    every = stored_mails(keys, contents, url, MailFilters(), epoch_ms(NOW), None)
    assert sorted(r["mailkey"] for r in every.collect()) == ["k1", "k2", "k3"]   # a key without mail is left
    by_rcpt = stored_mails(keys, contents, url, MailFilters.parse(recipient="u@local.test"), epoch_ms(NOW), None)
    assert sorted(r["mailkey"] for r in by_rcpt.collect()) == ["k1", "k3"]
    oldest = stored_mails(keys, contents, url, MailFilters(), epoch_ms(NOW), 2)
    assert sorted(r["mailkey"] for r in oldest.collect()) == ["k1", "k2"]
    older = stored_mails(keys, contents, url, MailFilters.parse(older_than="90m"), epoch_ms(NOW), None)
    assert sorted(r["mailkey"] for r in older.collect()) == ["k1", "k2"]
    assert repository_path(url) == "var/mail/error/"


def test_republish_selection(spark, view_of):
    in_broker, lost, recent = row("in broker"), row("lost"), row("recent", at=NOW - timedelta(seconds=10))
    live = view_of([in_broker, lost, recent])
    broker = spark.createDataFrame([(in_broker[3],)], "enqueueid string")
    items = not_in_broker(live, broker, epoch_ms(NOW - timedelta(minutes=1))).collect()
    assert [(r["name"], r["kind"], r["itemkey"]) for r in items] == [("lost", "notInBroker", lost[3])]


def test_orphan_window_and_references(spark):
    blobs = spark.createDataFrame([("referenced", 10, 5_000), ("orphan", 10, 5_000), ("too-old", 10, 1_000),
                                   ("too-young", 10, 9_000)], "blob_id string, size long, modified_ms long")
    tables = {
        "enqueuedmailsv4": spark.createDataFrame([("referenced", None)], "headerblobid string, bodyblobid string"),
        "mailrepositorycontentv2": spark.createDataFrame([], "headerblobid string, bodyblobid string"),
        "messagev3": spark.createDataFrame([("h", "b")], "headercontent string, bodycontent string"),
        "attachmentv2": spark.createDataFrame([("att",)], "blobid string"),
    }
    referenced = referenced_blob_ids(tables)
    assert sorted(r["blob_id"] for r in referenced.collect()) == ["att", "b", "h", "referenced"]
    assert [r["blob_id"] for r in unreferenced(blobs, referenced, 2_000, 8_000).collect()] == ["orphan"]


def test_enqueue_id_of_a_broker_message():
    enqueue_id = uuid.uuid4()
    assert enqueue_id_of(f'{{"enqueueId": "{enqueue_id}", "name": "m"}}'.encode()) == str(enqueue_id)
    assert enqueue_id_of(b"{not json") is None and enqueue_id_of(b'{"enqueueId": 3}') is None


def test_the_recovery_remembers_the_mails_it_republished_for_its_verification():
    recovery = RecoverLostMails()
    recovery.fixed({"kind": "notInBroker", "enqueueid": "e1"})
    recovery.fixed({"kind": "orphanMail", "enqueueid": "e2"})
    assert recovery.republished == {"e1"}
