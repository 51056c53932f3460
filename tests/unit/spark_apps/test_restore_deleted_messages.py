"""The vault restore job's pure parts: the query check, which entries match, the items, options, the outcome."""

from __future__ import annotations

import json

import pytest

from mailserver.model.address import Username
from mailserver.vault.model import StorageInformation, StoredDeletedMessage
from mailserver.vault.restore_id import restored_message_id
from spark_apps.common.procedure import ProcedureRunner
from spark_apps.jobs.restore_deleted_messages import (
    RestoreDeletedMessages,
    matching_entries,
    parse_query,
    restore_outcome,
)
from tests.contract.vault_contract import deleted

OWNER = Username.of("alice@example.com")
BUCKET = "deleted-messages-2026-10-01"
SUBJECT_CONTAINS = {"combinator": "and",
                    "criteria": [{"fieldName": "subject", "operator": "contains", "value": "invoice"}]}


def row(message, bucket: str = BUCKET) -> dict:
    stored = StoredDeletedMessage(message, StorageInformation(bucket, "blob-" + str(message.message_id)))
    return {"bucketname": bucket, "messageid": str(message.message_id), "payload": stored.payload()}


def test_the_query_is_checked_by_the_vault_parser():
    assert parse_query(json.dumps(SUBJECT_CONTAINS)) == SUBJECT_CONTAINS
    single = {"fieldName": "sender", "operator": "equals", "value": "bob@example.com"}
    assert parse_query(json.dumps(single)) == {"combinator": "and", "criteria": [single]}
    for bad in ("not json", '{"fieldName": "subject", "operator": "beforeOrEquals", "value": "x"}',
                '{"combinator": "or", "criteria": []}', '{"criteria": [], "limit": 0}',
                '{"fieldName": "sender", "operator": "equals", "value": "not an address"}'):
        with pytest.raises(ValueError):
            parse_query(bad)


def test_only_the_owners_matching_entries_become_items():
    invoice, other = deleted(OWNER, "invoice 42"), deleted(OWNER, "holiday pictures")
    foreign = deleted(Username.of("bob@example.com"), "invoice 43")   # a row that is not the owner's
    rows = [row(invoice), row(other), row(foreign), {"bucketname": BUCKET, "messageid": "x", "payload": "{not json"}]
    items = list(matching_entries(SUBJECT_CONTAINS, OWNER.value, rows))
    assert [(kind, bucket, message_id, restored) for kind, bucket, message_id, _, restored in items] == \
        [(BUCKET, BUCKET, str(invoice.message_id), str(restored_message_id(OWNER, invoice.message_id)))]
    assert {i[2] for i in matching_entries({"combinator": "and", "criteria": []}, OWNER.value, rows)} == \
        {str(invoice.message_id), str(other.message_id)}


def test_restored_copies_keep_the_delivery_date():
    from mailserver.vault.model import parse_zoned

    message = deleted(OWNER, "invoice 1")
    [(_, _, _, delivery, _)] = matching_entries(SUBJECT_CONTAINS, OWNER.value, [row(message)])
    assert parse_zoned(delivery) == message.delivery_date


def parse(argv):
    return ProcedureRunner(RestoreDeletedMessages()).parse(argv)


def test_options_are_checked_before_anything_runs(monkeypatch):
    monkeypatch.setenv("S3_ENDPOINT", "http://127.0.0.1:9000")
    monkeypatch.delenv("AMQP_URL", raising=False)
    monkeypatch.delenv("MAILSERVER_VAULT_RESTORE_LOCATION", raising=False)
    for bad in (["--user", "alice@example.com", "--query", '{"fieldName": "nope", "operator": "equals"}',
                 "--dry-run"],
                ["--user", "not a user", "--dry-run"],
                ["--user", "alice@example.com"]):    # a real run needs the broker of the events
        with pytest.raises(SystemExit) as exited:
            parse(bad)
        assert exited.value.code == 2
    _, _, options, running = parse(["--user", "Alice@Example.com", "--query", json.dumps(SUBJECT_CONTAINS),
                                    "--amqp-url", "amqp://guest:guest@127.0.0.1:5672/%2F"])
    assert running == {"username": "alice@example.com", "query": SUBJECT_CONTAINS,
                       "restoreLocation": "Restored-Messages"}
    assert not options.dry_run
    monkeypatch.setenv("MAILSERVER_VAULT_RESTORE_LOCATION", "Vault")
    assert parse(["--user", "alice@example.com", "--dry-run"])[3]["restoreLocation"] == "Vault"


def test_entries_without_content_are_skipped_not_failures():
    base = {"outcome": "PARTIAL", "errors": [], "unresolved": 2}
    assert restore_outcome({**base, "skippedContentNotFound": 2}) == "COMPLETED"
    assert restore_outcome({**base, "skippedContentNotFound": 1}) == "PARTIAL"
    assert restore_outcome({**base, "skippedContentNotFound": 2, "errors": [{"messageid": "x"}]}) == "PARTIAL"
    assert restore_outcome({"outcome": "DRY_RUN"}) == "DRY_RUN"


def test_the_run_ends_with_the_restore_outcome():
    report = {"outcome": "PARTIAL", "errors": [], "unresolved": 1, "skippedContentNotFound": 1}
    assert RestoreDeletedMessages().after_run(report, endpoint=None, dry_run=False)["outcome"] == "COMPLETED"


def test_repair_appends_once_then_skips_and_skips_gone_content(monkeypatch):
    """One entry's repair on the server's memory layer: restored with its id and date, then never twice."""
    from mailserver.blob.memory import MemoryBlobStore
    from mailserver.mailbox.wiring import memory_context
    from mailserver.model.mailbox import MailboxPath
    from mailserver.vault.memory import memory_vault
    from mailserver.vault.query import Query
    from mailserver.vault.restore import restore_mailbox
    from spark_apps.common import vault_restore
    from spark_apps.common.procedure import FIXED, SKIPPED

    blobs = MemoryBlobStore()
    mailbox, vault = memory_context(blobs), memory_vault(blobs)
    job = RestoreDeletedMessages()
    monkeypatch.setenv("S3_ENDPOINT", "http://127.0.0.1:9")
    job.configure(ProcedureRunner(job).parse(["--user", OWNER.value, "--dry-run"])[0])
    with vault_restore.serving(job.access, vault_restore.RestoreContext(None, mailbox.manager, vault)):
        restore_mailbox(mailbox.manager, OWNER, "Restored-Messages")
        kept, gone = deleted(OWNER, "invoice 1"), deleted(OWNER, "invoice 2")
        raw = b"Subject: invoice 1\r\n\r\nbody\n\xe9--"
        vault.append(kept, raw)
        [item] = [dict(zip(("kind", "bucketname", "messageid", "deliverydate", "restoredid"), i, strict=True))
                  for i in matching_entries({"combinator": "and", "criteria": []}, OWNER.value, [row(kept)])]

        first, again = job.repair(None, item), job.repair(None, item)
        assert (first.status, first.counter) == (FIXED, "successfulRestoreCount")
        assert (again.status, again.counter) == (SKIPPED, "skippedAlreadyRestored")
        [restored] = mailbox.manager.get_messages(MailboxPath.of(OWNER, "Restored-Messages"))
        assert restored.message_id == restored_message_id(OWNER, kept.message_id)
        assert mailbox.manager.read_message(restored.message_id) == raw
        missing = {**item, "messageid": str(gone.message_id),
                   "restoredid": str(restored_message_id(OWNER, gone.message_id))}
        skipped = job.repair(None, missing)
        assert (skipped.status, skipped.counter) == (SKIPPED, "skippedContentNotFound")
        assert [m.message_id for m in vault.search(OWNER, Query())] == [kept.message_id]   # the vault keeps it
