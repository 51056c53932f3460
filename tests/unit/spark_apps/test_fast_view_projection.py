"""Fast-view recomputation: detection on tiny DataFrames, and the job computes what the server computes."""

from __future__ import annotations

import io
import subprocess
import sys
import uuid
import zipfile

import pytest

from mailserver.blob import DEFAULT_BUCKET, MemoryBlobStore
from mailserver.mailbox.content import PREVIEW_SCAN_BYTES
from mailserver.mailbox.wiring import memory_context
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from spark_apps.common.bookkeeping import SliceResult
from spark_apps.common.procedure import Detection, ProcedureRunner
from spark_apps.jobs.recompute_fast_view_projection import (
    ALL_TASK,
    DEFAULT_BLOB_BUCKET,
    EXISTING,
    MISSING,
    USER_TASK,
    RecomputeFastViewProjection,
    compute_fast_view,
    fast_view_items,
    read_prefix,
)
from spark_apps.packaging import build_py_files
from tests.support.mime_samples import SAMPLES, big

S3_ENV = {"S3_ENDPOINT": "http://s3.invalid:9000", "S3_ACCESS_KEY": "k", "S3_SECRET_KEY": "s"}


class BlobBackedS3:
    """The ``DirectS3`` GETs the job makes, answered from a blob store (S3's key = the blob id)."""

    def __init__(self, blobs: MemoryBlobStore) -> None:
        self.blobs = blobs

    def get_object(self, bucket: str, key: str) -> io.BytesIO:
        assert bucket == self.blobs.default_bucket.value
        return io.BytesIO(self.blobs.read(self.blobs.default_bucket, key))


def test_preview_and_attachment_equal_what_the_servers_listener_stored():
    blobs = MemoryBlobStore()
    ctx = memory_context(blobs)
    inbox = MailboxPath.inbox(Username.of("bob@example.com"))
    ctx.manager.create_mailbox(inbox)
    raws = [kind(n) for n, kind in enumerate(SAMPLES)] + [big(99)]
    appended = [ctx.manager.append(inbox, raw) for raw in raws]
    s3 = BlobBackedS3(blobs)
    seen = set()
    for result in appended:
        message_id = result.id.message_id
        content = ctx.messages.get_content(message_id)
        prefix = read_prefix(s3, blobs.default_bucket.value, content.header_blob_id, content.body_blob_id,
                             PREVIEW_SCAN_BYTES)
        assert compute_fast_view(prefix) == ctx.fast_view.retrieve(message_id)
        seen.add(compute_fast_view(prefix)[1])
    assert seen == {True, False}   # the samples cover both answers
    # the big message's attachment lies past the scanned prefix: the server says False, so must the job
    assert ctx.fast_view.retrieve(appended[-1].id.message_id)[1] is False


def test_the_default_bucket_is_the_servers():
    assert DEFAULT_BLOB_BUCKET == DEFAULT_BUCKET


def test_the_servers_pure_modules_travel_in_the_zip_and_import_from_it_alone(tmp_path):
    archive = build_py_files(tmp_path)
    names = zipfile.ZipFile(archive).namelist()
    assert {"mailserver/__init__.py", "mailserver/mailbox/content.py", "mailserver/model/quota.py"} <= set(names)
    assert "mailserver/mailbox/manager.py" not in names   # only the pure modules
    code = (f"import sys; sys.path.insert(0, {str(archive)!r})\n"
            "import mailserver.mailbox.content as c, spark_apps.jobs.recompute_fast_view_projection as fv\n"
            "import spark_apps.jobs.recompute_current_quotas as q\n"
            "assert c.__file__.startswith(sys.path[0]), c.__file__\n"
            "print(fv.compute_fast_view(b'Subject: x\\r\\n\\r\\nhi  there'), q.quota_identifier('bob@example.com'))\n")
    # -S -I: no site-packages, no PYTHONPATH: what an executor without the server installed has
    done = subprocess.run([sys.executable, "-S", "-I", "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "('hi there', False) #private&bob@example.com@example.com"


SCHEMAS = ("messageid string, mailboxid string", "user string, mailboxid string", "messageid string")


def items(spark, messages, mailboxes, projection, rebuild_all=False):
    frames = [spark.createDataFrame(rows, schema) for rows, schema in zip((messages, mailboxes, projection), SCHEMAS,
                                                                          strict=True)]
    found = fast_view_items(*frames, rebuild_all=rebuild_all)
    return sorted((r["kind"], r["messageid"], r["user"]) for r in found.collect())


@pytest.mark.spark
def test_only_messages_without_a_row_are_missing_and_a_copied_message_counts_once(spark):
    bob_inbox, bob_sent, alice_inbox, no_path = (str(uuid.uuid1()) for _ in range(4))
    mailboxes = [("bob", bob_inbox), ("bob", bob_sent), ("alice", alice_inbox)]
    messages = [("m1", bob_inbox), ("m2", bob_inbox), ("m2", bob_sent), ("m3", alice_inbox), ("m4", alice_inbox),
                ("m5", no_path)]    # a mailbox nobody owns is out of every user's scope
    assert items(spark, messages, mailboxes, [("m1",), ("m4",)]) == [(MISSING, "m2", "bob"),
                                                                      (MISSING, "m3", "alice")]
    assert items(spark, messages, mailboxes, [("m1",), ("m4",)], rebuild_all=True) == [
        (EXISTING, "m1", "bob"), (EXISTING, "m4", "alice"), (MISSING, "m2", "bob"), (MISSING, "m3", "alice")]


@pytest.mark.spark
def test_a_complete_projection_yields_nothing_to_do(spark):
    box = str(uuid.uuid1())
    assert items(spark, [("m1", box)], [("bob", box)], [("m1",)]) == []


def parse(argv, monkeypatch, env=S3_ENV):
    for key in ("S3_ENDPOINT", "S3_ACCESS_KEY", "S3_SECRET_KEY", "S3_DEFAULT_BUCKET"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    procedure = RecomputeFastViewProjection()
    return procedure, ProcedureRunner(procedure).parse(argv)[3]


def test_blob_bucket_defaults_to_the_servers_setting(monkeypatch):
    procedure, options = parse([], monkeypatch)
    assert procedure.bucket == "default" and options["mode"] == "missing"
    procedure, _ = parse([], monkeypatch, {**S3_ENV, "S3_DEFAULT_BUCKET": "james-mail"})
    assert procedure.bucket == "james-mail"
    procedure, options = parse(["--blob-bucket", "other", "--mode", "rebuild-all", "--rate", "10"], monkeypatch)
    assert (procedure.bucket, procedure.rebuild_all) == ("other", True)
    assert options == {"messagesPerSecond": 10.0, "mode": "rebuild-all", "blobBucket": "other"}
    assert procedure.s3.endpoint == S3_ENV["S3_ENDPOINT"]


def test_without_s3_settings_the_job_refuses_to_start(monkeypatch, capsys):
    with pytest.raises(SystemExit):
        parse([], monkeypatch, {})
    assert "S3_ENDPOINT" in capsys.readouterr().err


def test_report_fields_of_the_all_users_and_the_user_variants(monkeypatch):
    result = SliceResult(counters={"processedMessageCount": 7, "skippedResolvedMeanwhile": 1},
                         failures=[{"messageid": "m1", "user": "bob", "error": "x"},
                                   {"messageid": "m2", "user": "bob", "error": "x"}])
    detection = Detection(None, {"scannedUserCount": 4, "scannedMessageCount": 20})
    procedure, _ = parse([], monkeypatch)
    assert procedure.report_fields(detection, result) == {
        "type": ALL_TASK, "processedUserCount": 3, "processedMessageCount": 7, "failedUserCount": 1,
        "failedMessageCount": 2, "skippedResolvedMeanwhile": 1}
    procedure, options = parse(["--user", "Bob@Example.com"], monkeypatch)
    fields = procedure.report_fields(detection, result)
    assert fields["type"] == USER_TASK and fields["username"] == "bob@example.com"
    assert options["username"] == "bob@example.com" and "processedUserCount" not in fields
