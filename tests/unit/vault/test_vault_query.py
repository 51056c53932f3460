"""The vault's query (James's QueryTranslator) and payload JSON (James's DTO), without a backend."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from mailserver.model.address import Username
from mailserver.vault.model import StorageInformation, StoredDeletedMessage, format_zoned, parse_zoned
from mailserver.vault.query import InvalidQuery, Query
from tests.contract.vault_contract import deleted


class TestQueryParsing:

    @pytest.mark.parametrize("body", [
        {"combinator": "or", "criteria": []},
        {"criteria": [{"fieldName": "subject", "operator": "beforeOrEquals", "value": "x"}]},
        {"criteria": [{"fieldName": "unknown", "operator": "equals", "value": "x"}]},
        {"criteria": [{"fieldName": "subject", "operator": "like", "value": "x"}]},
        {"criteria": [{"fieldName": "sender", "operator": "equals", "value": "not an address"}]},
        {"criteria": [{"fieldName": "deliveryDate", "operator": "afterOrEquals", "value": "2024-01-01"}]},
        {"criteria": [{"combinator": "and", "criteria": []}]},
        {"criteria": [], "limit": 0},
        {"criteria": [], "limit": "ten"},
        [],
    ])
    def test_invalid_queries_are_refused(self, body):
        with pytest.raises(InvalidQuery):
            Query.parse(body)

    def test_a_single_criterion_without_wrapper_is_a_query(self):
        query = Query.parse({"fieldName": "subject", "operator": "contains", "value": "x"})
        assert query.to_json() == {"combinator": "and",
                                   "criteria": [{"fieldName": "subject", "operator": "contains", "value": "x"}]}

    def test_empty_criteria_match_everything(self):
        assert Query.parse({"combinator": "and", "criteria": []}).matches(deleted(Username.of("a@b.org")))


class TestPayload:
    def test_payload_has_james_shape(self):
        message = deleted(Username.of("bob@example.com"), "hello")
        payload = json.loads(StoredDeletedMessage(message, StorageInformation("deleted-messages-2001-05-01",
                                                                                   "blob-1")).payload())
        assert list(payload) == ["deletedMessage", "storageInformation"]
        assert payload["storageInformation"] == {"bucketName": "deleted-messages-2001-05-01", "blobId": "blob-1"}
        assert list(payload["deletedMessage"]) == ["messageId", "originMailboxes", "owner", "deliveryDate",
                                                   "deletionDate", "sender", "recipients", "subject",
                                                   "hasAttachment", "size"]
        assert payload["deletedMessage"]["deletionDate"] == "2001-05-17T10:30:12.345Z"

    def test_absent_subject_is_left_out_and_null_sender_is_angle_brackets(self):
        message = deleted(Username.of("bob@example.com"), None, sender=None)
        body = json.loads(StoredDeletedMessage(message, StorageInformation("b", "i")).payload())["deletedMessage"]
        assert "subject" not in body
        assert body["sender"] == "<>"

    def test_payload_written_by_james_is_read(self):
        james = ('{"deletedMessage":{"messageId":"2d0b1d30-f0a0-11ee-9c4f-4b1b3a1d2e10","originMailboxes":'
                 '["3e1c2e40-f0a0-11ee-9c4f-4b1b3a1d2e10"],"owner":"bob@example.com",'
                 '"deliveryDate":"2024-03-30T14:12:00Z","deletionDate":"2024-04-20T09:08:00.123456789Z",'
                 '"sender":"<>","recipients":["bob@example.com"],"hasAttachment":true,"size":1234},'
                 '"storageInformation":{"bucketName":"deleted-messages-2024-04-01","blobId":"abc"}}')
        entry = StoredDeletedMessage.from_payload(james)
        assert entry.message.sender is None and entry.message.subject is None
        assert entry.message.deletion_date == datetime(2024, 4, 20, 9, 8, 0, 123456, tzinfo=UTC)
        assert entry.storage.blob_id == "abc"

    @pytest.mark.parametrize(("moment", "text"), [
        (datetime(2024, 3, 30, 14, 12, tzinfo=UTC), "2024-03-30T14:12:00Z"),
        (datetime(2024, 3, 30, 14, 12, 0, 120000, tzinfo=UTC), "2024-03-30T14:12:00.12Z"),
    ])
    def test_dates_are_java_iso_zoned(self, moment, text):
        assert format_zoned(moment) == text
        assert parse_zoned(text) == moment

    def test_dates_with_offset_or_region_are_read_in_utc(self):
        assert parse_zoned("2024-03-30T16:12:00+02:00[Europe/Paris]") == datetime(2024, 3, 30, 14, 12, tzinfo=UTC)
