"""Mailbox events to James's JSON and back: round trips, James's own samples, hostile bodies."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from mailserver.model import events as events_module
from mailserver.model.address import Username
from mailserver.model.event_json import (
    EventDeserializationError,
    deserialize_event,
    deserialize_events,
    event_from_json,
    event_to_json,
    serialize_event,
    serialize_events,
)
from mailserver.model.events import (
    EVENT_TYPES,
    Added,
    Expunged,
    FlagsUpdated,
    MailboxACLUpdated,
    MailboxAdded,
    MailboxDeletion,
    MailboxEvent,
    MailboxRenamed,
    MailboxSubscribedEvent,
    MailboxUnSubscribedEvent,
    MessageContentDeletionEvent,
    MessageMoveEvent,
    QuotaUsageUpdatedEvent,
    UpdatedFlags,
)
from mailserver.model.flags import Flags, SystemFlag
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.jsonvalues import format_instant, parse_instant
from mailserver.model.mailbox import MailboxPath
from mailserver.model.message import EventMessageMetadata, MessageMetadata
from mailserver.model.quota import QuotaLimits, QuotaRoot, QuotaScope, QuotaUsage

SAMPLES = Path(__file__).parent / "james_event_samples"
USER = Username.of("bob@example.org")
INBOX = MailboxPath.inbox(USER)
BOX, OTHER_BOX = MailboxId.generate(), MailboxId.generate()
MSG, OTHER_MSG = MessageId.generate(), MessageId.generate()
WHEN = datetime(2024, 1, 1, 10, 0, 0, 123000, tzinfo=UTC)


def meta(uid: int, *, save_date: datetime | None = WHEN, thread: MessageId = MSG) -> EventMessageMetadata:
    return EventMessageMetadata(uid=uid, mod_seq=uid + 10, flags=Flags.of(SystemFlag.SEEN, user=["$Junk"]),
                                size=4510, internal_date=WHEN, save_date=save_date, message_id=MSG, thread_id=thread)


def every_event() -> list[MailboxEvent]:
    common = {"user": USER, "session_id": 12}
    return [
        MailboxAdded(**common, path=INBOX, mailbox_id=BOX),
        MailboxDeletion(**common, path=INBOX.child("Old"), mailbox_id=BOX, quota_root=QuotaRoot.for_user(USER),
                        deleted_message_count=3, total_deleted_size=900, acl={"alice@example.org": "lr", "-$g": "w"}),
        MailboxDeletion(**common, path=INBOX, mailbox_id=BOX, quota_root=QuotaRoot.for_user(USER),
                        deleted_message_count=0, total_deleted_size=0),
        MailboxRenamed(**common, path=INBOX.child("A"), new_path=INBOX.child("B"), mailbox_id=BOX),
        MailboxACLUpdated(**common, path=INBOX, mailbox_id=BOX, old_acl={"alice@example.org": "lr"},
                          new_acl={"alice@example.org": "lrswipkxtea", "$any": "ra"}),
        Added(**common, path=INBOX, mailbox_id=BOX, added=(meta(1), meta(2, save_date=None, thread=OTHER_MSG)),
              is_delivery=True),
        Added(**common, path=INBOX, mailbox_id=BOX, added=(), is_appended=False, moved_from=OTHER_BOX),
        Expunged(**common, path=INBOX, mailbox_id=BOX, expunged=(meta(7),)),
        Expunged(**common, path=INBOX, mailbox_id=BOX, expunged=(meta(7),), moved_to=OTHER_BOX),
        FlagsUpdated(**common, path=INBOX, mailbox_id=BOX, updated=(
            UpdatedFlags(1, 5, Flags(), Flags.of(SystemFlag.SEEN, SystemFlag.DRAFT, user=["a", "b"])),
            UpdatedFlags(2, 6, Flags.of(SystemFlag.RECENT), Flags(), MSG, WHEN))),
        MessageMoveEvent(user=USER, previous_mailbox_ids=(BOX,), target_mailbox_ids=(OTHER_BOX, BOX),
                         message_ids=(MSG, OTHER_MSG)),
        QuotaUsageUpdatedEvent(user=USER, quota_root=QuotaRoot.for_user(USER), usage=QuotaUsage(3, 1200),
                               limits=QuotaLimits(count=100, size=None),
                               count_limits={QuotaScope.USER: 100, QuotaScope.GLOBAL: 1000},
                               size_limits={QuotaScope.DOMAIN: None}),
        QuotaUsageUpdatedEvent(user=Username.of("foo"), quota_root=QuotaRoot.for_user(Username.of("foo")),
                               usage=QuotaUsage(0, 0), limits=QuotaLimits()),
        MailboxSubscribedEvent(**common, path=INBOX.child("News"), mailbox_id=BOX),
        MailboxUnSubscribedEvent(**common, path=INBOX.child("News"), mailbox_id=BOX),
        MessageContentDeletionEvent(user=USER, mailbox_id=BOX, message_id=MSG, size=12345, internal_date=WHEN,
                                    has_attachments=True, body_blob_id="body-blob", acl={"alice@example.org": "r"},
                                    flags=Flags.of(SystemFlag.FLAGGED, user=["$Forwarded"]),
                                    header_blob_id="header-blob", header_content="Subject: hi\r\n",
                                    mailbox_path="#private:bob@example.org:INBOX"),
        MessageContentDeletionEvent(user=USER, mailbox_id=BOX, message_id=MSG, size=1, internal_date=WHEN,
                                    has_attachments=False, body_blob_id="b"),
    ]


# ---------------------------------------------------------------- round trips
@pytest.mark.parametrize("event", every_event(), ids=lambda e: e.type_name)
def test_every_event_round_trips_exactly(event):
    text = serialize_event(event)
    assert deserialize_event(text) == event
    assert deserialize_event(text.encode()) == event
    assert event_from_json(event_to_json(event)) == event
    assert serialize_event(deserialize_event(text)) == text


def test_the_round_trips_cover_every_type_james_knows():
    assert {e.type_name for e in every_event()} == set(EVENT_TYPES) == {
        "MailboxAdded", "MailboxDeletion", "MailboxRenamed", "MailboxACLUpdated", "Added", "Expunged",
        "FlagsUpdated", "MessageMoveEvent", "QuotaUsageUpdatedEvent", "MailboxSubscribedEvent",
        "MailboxUnSubscribedEvent", "MessageContentDeletionEvent"}


def test_text_is_compact_in_james_field_order_and_keeps_non_ascii():
    event = Added(user=USER, session_id=3, path=MailboxPath.of(USER, "Données"), mailbox_id=BOX, added=(meta(1),))
    text = serialize_event(event)
    assert ": " not in text and ", " not in text and "Données" in text
    assert list(json.loads(text)["Added"]) == ["eventId", "sessionId", "user", "path", "mailboxId", "added",
                                               "isDelivery", "isAppended"]
    assert list(json.loads(text)["Added"]["added"]["1"]) == ["uid", "modSeq", "flags", "size", "internalDate",
                                                             "saveDate", "messageId", "threadId"]


def test_events_without_a_session_id_in_james_carry_none():
    for event in every_event():
        body = event.to_json()[event.type_name]
        has_it = event.type_name not in {"MessageMoveEvent", "QuotaUsageUpdatedEvent", "MessageContentDeletionEvent"}
        assert ("sessionId" in body) is has_it, event.type_name
    deletion = next(e for e in every_event() if isinstance(e, MessageContentDeletionEvent))
    assert "username" in deletion.to_json()["MessageContentDeletionEvent"]


def test_added_keeps_only_what_travels_on_the_wire():
    stored = MessageMetadata(mailbox_id=BOX, message_id=MSG, uid=4, mod_seq=9, flags=Flags(), thread_id=MSG,
                             internal_date=datetime(2024, 1, 1, 10, 0), save_date=None, body_start_octet=120,
                             size=300, header_blob_id="h")  # naive, as the Cassandra driver returns timestamps
    event = Added(user=USER, path=INBOX, mailbox_id=BOX, added=(stored,))
    assert event.added == (stored.for_event(),)
    assert event.added[0].internal_date == datetime(2024, 1, 1, 10, 0, tzinfo=UTC)
    assert deserialize_event(serialize_event(event)) == event


def test_acl_updated_carries_both_acls_and_their_difference():
    event = MailboxACLUpdated(user=USER, path=INBOX, mailbox_id=BOX, old_acl={"a@x.org": "lr", "b@x.org": "r"},
                              new_acl={"a@x.org": "lrw", "c@x.org": "ra"})
    assert event.to_json()["MailboxACLUpdated"]["aclDiff"] == {
        "oldACL": {"a@x.org": "lr", "b@x.org": "r"}, "newACL": {"a@x.org": "lrw", "c@x.org": "ar"}}
    assert event.changes() == ({"a@x.org": "lrw", "c@x.org": "ra"}, {"a@x.org": "lr", "b@x.org": "r"})


def test_quota_unlimited_is_null_whatever_the_store_said():
    event = QuotaUsageUpdatedEvent(user=USER, quota_root=QuotaRoot.for_user(USER), usage=QuotaUsage(1, 2),
                                   limits=QuotaLimits(count=-1, size=50), count_limits={QuotaScope.USER: -1})
    body = event.to_json()["QuotaUsageUpdatedEvent"]
    assert body["countQuota"] == {"used": 1, "limit": None, "limits": {"User": None}}
    assert body["sizeQuota"] == {"used": 2, "limit": 50, "limits": {}}
    assert event.limits == QuotaLimits(count=None, size=50)
    assert deserialize_event(serialize_event(event)) == event


# ---------------------------------------------------------------- James's samples
def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


FULL_SAMPLES = sorted(p.name for p in SAMPLES.glob("*.json") if "legacy" not in p.name and "without" not in p.name)


@pytest.mark.parametrize("name", FULL_SAMPLES)
def test_james_samples_decode_and_encode_back_to_the_same_json(name):
    event = deserialize_event(sample(name))
    assert json.loads(serialize_event(event)) == json.loads(sample(name))


def test_the_samples_cover_every_type():
    assert {next(iter(json.loads(sample(n)))) for n in FULL_SAMPLES} == set(EVENT_TYPES)


def test_james_added_sample_decodes_to_the_expected_values():
    event = deserialize_event(sample("added_moved_from.json"))
    assert isinstance(event, Added)
    assert (event.user, event.session_id, event.event_id) == (
        Username.of("user"), 42, uuid.UUID("6e0dd59d-660e-4d9b-b22f-0354479f47b4"))
    assert event.path == MailboxPath("#private", Username.of("user"), "mailboxName")
    assert (event.is_delivery, event.is_appended) == (False, True)
    assert event.moved_from == MailboxId.of("c6a1d2e0-9a6b-11ef-8000-000000000028")
    (m,) = event.added
    assert (m.uid, m.mod_seq, m.size) == (123456, 35, 45)
    assert m.flags == Flags.of(SystemFlag.ANSWERED, SystemFlag.DRAFT, user=["User Custom Flag"])
    assert m.internal_date == m.save_date == datetime(2018, 12, 14, 9, 41, 51, 541000, tzinfo=UTC)
    assert m.thread_id == MessageId.of("d7b2e3f0-9a6b-11ef-8000-000000000100") != m.message_id


def test_legacy_added_gets_james_defaults():
    event = deserialize_event(sample("added_legacy.json"))
    assert isinstance(event, Added)
    assert (event.is_delivery, event.is_appended, event.moved_from) == (False, True, None)
    assert event.added[0].save_date is None
    assert event.added[0].thread_id == event.added[0].message_id  # James: the thread of a lone message


def test_legacy_deletion_and_content_deletion_default_acl_and_flags():
    deletion = deserialize_event(sample("mailbox_deletion_legacy.json"))
    assert isinstance(deletion, MailboxDeletion) and deletion.acl == {}
    assert deletion.quota_root == QuotaRoot("#private&user@domain", Username.of("user@domain").domain)
    no_acl = deserialize_event(sample("message_content_deletion_legacy_without_acl.json"))
    assert isinstance(no_acl, MessageContentDeletionEvent) and no_acl.acl == {}
    no_flags = deserialize_event(sample("message_content_deletion_without_flags.json"))
    assert isinstance(no_flags, MessageContentDeletionEvent)
    assert (no_flags.flags, no_flags.header_content, no_flags.mailbox_path) == (Flags(), None, None)
    assert no_flags.user == Username.of("user@domain.tld") and no_flags.header_blob_id == "header-blob-id"


def test_acl_and_quota_samples_decode_to_our_forms():
    acl = deserialize_event(sample("mailbox_acl_updated.json"))
    assert isinstance(acl, MailboxACLUpdated)
    assert (acl.old_acl, acl.new_acl) == ({}, {"$any": "ra", "-alice": "i"})  # rights in our canonical order
    quota = deserialize_event(sample("quota_usage_updated_with_scopes.json"))
    assert isinstance(quota, QuotaUsageUpdatedEvent)
    assert (quota.usage, quota.limits) == (QuotaUsage(12, 1234), QuotaLimits(count=100, size=None))
    assert quota.count_limits == {QuotaScope.DOMAIN: 100}
    assert quota.size_limits == {QuotaScope.GLOBAL: 10000, QuotaScope.USER: None}
    assert quota.time == datetime(2018, 11, 13, 12, 0, 55, tzinfo=UTC)


# ---------------------------------------------------------------- batches
def test_a_batch_array_decodes_to_a_list_and_one_object_to_a_list_of_one():
    batch = every_event()[:4]
    assert deserialize_events(serialize_events(batch)) == batch
    assert deserialize_events(serialize_event(batch[0])) == [batch[0]]
    assert deserialize_events("[]") == []
    assert json.loads(serialize_events(batch)) == [e.to_json() for e in batch]


def test_one_bad_element_fails_the_whole_batch():
    good = serialize_event(every_event()[0])
    with pytest.raises(EventDeserializationError, match="unknown event type 'Nope'"):
        deserialize_events(f'[{good}, {{"Nope": {{}}}}]')
    with pytest.raises(EventDeserializationError, match="array"):
        deserialize_event(f"[{good}]")


# ---------------------------------------------------------------- hostile bodies
def added_body(**changes) -> str:
    body = json.loads(sample("added.json"))
    body["Added"].update(changes)
    return json.dumps({k: {f: v for f, v in b.items() if v is not ...} for k, b in body.items()})


@pytest.mark.parametrize(("text", "message"), [
    ("", "not JSON"),
    ("{", "not JSON"),
    (b"\xff\xfe{}", "not UTF-8"),
    ('{"Added": NaN}', "NaN"),
    ("42", "single key"),
    ('"Added"', "single key"),
    ("{}", "single key"),
    ('{"Added": {}, "Expunged": {}}', "single key"),
    ('{"Unknown": {}}', "unknown event type 'Unknown'"),
    ('{"Added": []}', "expected a JSON object"),
    ('{"Added": null}', "expected a JSON object"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply|not JSON"),
    (added_body(sessionId=...), "'sessionId' is missing"),
    (added_body(eventId=...), "'eventId' is missing"),
    (added_body(user=...), "'user' is missing"),
    (added_body(sessionId="42"), "'sessionId' must be an integer"),
    (added_body(isDelivery="yes"), "'isDelivery' must be a boolean"),
    (added_body(eventId="not-a-uuid"), "not a UUID"),
    (added_body(mailboxId="18"), "not a UUID: '18'"),
    (added_body(mailboxId=18), "'mailboxId' must be a string"),
    (added_body(mailboxId=str(uuid.uuid4())), "not a time-based UUID"),
    (added_body(user="two words"), "invalid username"),
    (added_body(path={"namespace": "#private", "name": "INBOX"}), "'user' is missing"),
    (added_body(added={"x": {}}), "not a uid"),
    (added_body(added={"1": {"uid": True, "modSeq": 1, "flags": {}, "size": 1,
                             "internalDate": "2020-01-01T00:00:00Z", "messageId": str(uuid.uuid1())}}),
     "'uid' must be an integer"),
    (added_body(added={"1": {"uid": 1, "modSeq": 1, "flags": {"systemFlags": ["Shiny"]}, "size": 1,
                             "internalDate": "2020-01-01T00:00:00Z", "messageId": str(uuid.uuid1())}}),
     "unknown system flag"),
    (added_body(added={"1": {"uid": 1, "modSeq": 1, "flags": {}, "size": 1, "internalDate": "",
                             "messageId": str(uuid.uuid1())}}), "not an ISO-8601 instant"),
])
def test_malformed_and_unknown_bodies_raise_a_clear_error(text, message):
    with pytest.raises(EventDeserializationError, match=message) as caught:
        deserialize_event(text)
    assert isinstance(caught.value, ValueError)


def test_bad_acl_quota_and_move_fields_are_refused():
    acl = json.loads(sample("mailbox_acl_updated.json"))
    acl["MailboxACLUpdated"]["aclDiff"]["newACL"] = {"alice": "rz"}
    quota = json.loads(sample("quota_usage_updated.json"))
    quota["QuotaUsageUpdatedEvent"]["countQuota"]["limits"] = {"Planet": 1}
    no_limit = json.loads(sample("quota_usage_updated.json"))
    del no_limit["QuotaUsageUpdatedEvent"]["sizeQuota"]["limit"]
    move = json.loads(sample("message_move_event.json"))
    move["MessageMoveEvent"]["previousMailboxIds"] = [None]
    for data, message in ((acl, "unknown right"), (quota, "unknown quota scope 'Planet'"),
                          (no_limit, "'limit' is missing"), (move, "array of strings")):
        with pytest.raises(EventDeserializationError, match=message):
            event_from_json(data)


def test_the_wire_api_is_reexported_from_events():
    assert events_module.deserialize_event is deserialize_event
    assert events_module.EventDeserializationError is EventDeserializationError
    from mailserver.model.events import deserialize_events as reexported
    from mailserver.model.events import serialize_event as also

    assert (reexported, also) == (deserialize_events, serialize_event)
    with pytest.raises(AttributeError):
        _ = events_module.no_such_name


# ---------------------------------------------------------------- instants
@pytest.mark.parametrize(("text", "expected"), [
    ("2018-12-14T09:41:51.541Z", datetime(2018, 12, 14, 9, 41, 51, 541000, tzinfo=UTC)),
    ("2018-12-14T09:41:51Z", datetime(2018, 12, 14, 9, 41, 51, tzinfo=UTC)),
    ("2018-12-14T09:41:51.123456789Z", datetime(2018, 12, 14, 9, 41, 51, 123456, tzinfo=UTC)),
    ("2018-12-14T11:41:51.5+02:00", datetime(2018, 12, 14, 9, 41, 51, 500000, tzinfo=UTC)),
    ("2018-12-14T04:41:51-0500", datetime(2018, 12, 14, 9, 41, 51, tzinfo=UTC)),
])
def test_james_instant_forms_are_read(text, expected):
    assert parse_instant(text) == expected


def test_instants_are_written_as_java_iso_instant():
    assert format_instant(datetime(2018, 12, 14, 9, 41, 51, 541000, tzinfo=UTC)) == "2018-12-14T09:41:51.541Z"
    assert format_instant(datetime(2018, 12, 14, 9, 41, 51, tzinfo=UTC)) == "2018-12-14T09:41:51Z"
    assert format_instant(datetime(2018, 12, 14, 9, 41, 51, 1, tzinfo=UTC)) == "2018-12-14T09:41:51.000001Z"
    assert format_instant(datetime(2018, 12, 14, 10, 41, 51, tzinfo=timezone(timedelta(hours=1)))) == \
        "2018-12-14T09:41:51Z"
    for bad in ("", "2018-12-14", "yesterday", "2018-12-14T09:41:51.Z"):
        with pytest.raises(ValueError, match="ISO-8601"):
            parse_instant(bad)
