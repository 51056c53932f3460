"""James's mail reference JSON and attribute serialization."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from mailserver.model.address import MailAddress
from mailserver.model.mail import Mail, MailContent, PerRecipientHeader
from mailserver.queue.naming import QueueNames, queue_name_of_workqueue, validate_queue_name
from mailserver.queue.serialization import (
    FIELDS,
    MailReference,
    SerializationError,
    attribute_from_string,
    attribute_to_json,
    attribute_to_string,
    deserialize_reference,
    serialize_reference,
)
from mailserver.queue.view import bucket_of, java_string_hash, slice_start


def stored_mail(**overrides) -> Mail:
    values = dict(
        name="Mail1700000000000-abcdefghijklmnopqrst", sender=MailAddress.of("s@z.org"),
        recipients=[MailAddress.of("a@x.org"), MailAddress.of("b@y.org")],
        content=MailContent.of_blobs("header-id", "body-id", 42), state="root", error_message=None,
        attributes={"org.apache.james.HELO": "client.example", "n": 7, "l": [True, 1.5, {"k": "v"}]},
        remote_host="client.example", remote_addr="192.0.2.1",
        last_updated=datetime(2026, 11, 22, 1, 2, 3, 456000, tzinfo=UTC),
        per_recipient_headers=[PerRecipientHeader("a@x.org", "X-H", "v1"), PerRecipientHeader("a@x.org", "X-H", "v2"),
                               PerRecipientHeader("b@y.org", "X-Other", "w")])
    values.update(overrides)
    return Mail(**values)


def test_reference_uses_james_field_names_verbatim():
    ref = MailReference(uuid.UUID("3fa85f64-5717-4562-b3fc-2c963f66afa6"), stored_mail())
    doc = json.loads(serialize_reference(ref))
    assert list(doc) == list(FIELDS)
    assert doc["enqueueId"] == "3fa85f64-5717-4562-b3fc-2c963f66afa6"
    assert doc["recipients"] == ["a@x.org", "b@y.org"]
    assert doc["sender"] == "s@z.org" and doc["errorMessage"] is None
    assert doc["lastUpdated"] == "2026-11-22T01:02:03.456000Z"
    assert doc["perRecipientHeaders"] == {"a@x.org": {"header": {"X-H": ["v1", "v2"]}},
                                          "b@y.org": {"header": {"X-Other": ["w"]}}}
    assert (doc["headerBlobId"], doc["bodyBlobId"]) == ("header-id", "body-id")
    # attribute values are JSON strings holding {serializer, value}
    assert json.loads(doc["attributes"]["org.apache.james.HELO"]) == \
        {"serializer": "StringSerializer", "value": "client.example"}
    assert json.loads(doc["attributes"]["n"]) == {"serializer": "IntSerializer", "value": 7}
    assert json.loads(doc["attributes"]["l"]) == {"serializer": "CollectionSerializer", "value": [
        {"serializer": "BooleanSerializer", "value": True}, {"serializer": "DoubleSerializer", "value": 1.5},
        {"serializer": "MapSerializer", "value": {"k": {"serializer": "StringSerializer", "value": "v"}}}]}


def test_reference_round_trip():
    ref = MailReference(uuid.uuid4(), stored_mail())
    back = deserialize_reference(serialize_reference(ref), size=42)
    assert back == ref


def test_null_sender_round_trip():
    ref = MailReference(uuid.uuid4(), stored_mail(sender=None))
    assert json.loads(serialize_reference(ref))["sender"] is None
    assert deserialize_reference(serialize_reference(ref), size=42).mail.sender is None


def test_inline_content_cannot_be_referenced():
    with pytest.raises(SerializationError, match="blob store"):
        serialize_reference(MailReference(uuid.uuid4(), stored_mail(content=MailContent.of_bytes(b"x: y\r\n\r\n"))))


def test_unserialisable_attributes_are_dropped():
    mail = stored_mail(attributes={"ok": "v"})
    mail.attributes["exception"] = RuntimeError("boom")
    mail.attributes["huge"] = 2**70
    doc = json.loads(serialize_reference(MailReference(uuid.uuid4(), mail)))
    assert list(doc["attributes"]) == ["ok"]


@pytest.mark.parametrize(("value", "serializer"), [
    ("s", "StringSerializer"), (True, "BooleanSerializer"), (1, "IntSerializer"), (2**31, "LongSerializer"),
    (-(2**31), "IntSerializer"), (0.25, "DoubleSerializer"), ([1, "a"], "CollectionSerializer"),
    ({"a": [1]}, "MapSerializer"), (None, "OptionalSerializer"),
])
def test_attribute_serializers(value, serializer):
    assert attribute_to_json(value)["serializer"] == serializer
    assert attribute_from_string(attribute_to_string(value)) == value


def test_attributes_james_may_write_are_read():
    assert attribute_from_string('{"serializer":"FloatSerializer","value":1.5}') == 1.5
    assert attribute_from_string('{"serializer":"DateSerializer","value":"2026-01-01T00:00:00Z"}') == \
        "2026-01-01T00:00:00Z"
    assert attribute_from_string('{"serializer":"OptionalSerializer","value":'
                                 '{"serializer":"StringSerializer","value":"x"}}') == "x"
    assert attribute_from_string('{"serializer":"DoubleSerializer","value":2}') == 2.0


@pytest.mark.parametrize("bad", [
    "not json", "[]", '{"value": 1}', '{"serializer":"IntSerializer","value":"1"}',
    '{"serializer":"BooleanSerializer","value":1}', '{"serializer":"ArbitrarySerializableSerializer","value":"x"}',
    '{"serializer":"CollectionSerializer","value":{}}', '{"serializer":"MapSerializer","value":[]}',
])
def test_bad_attributes_are_clear_errors(bad):
    with pytest.raises(SerializationError):
        attribute_from_string(bad)


def test_no_serializer_values_are_dropped_on_read():
    doc = json.loads(serialize_reference(MailReference(uuid.uuid4(), stored_mail(attributes={}))))
    doc["attributes"] = {"gone": '{"serializer":"NoSerializer","value":null}', "kept": attribute_to_string("v")}
    assert deserialize_reference(json.dumps(doc)).mail.attributes == {"kept": "v"}


def test_map_keys_must_be_strings():
    with pytest.raises(SerializationError, match="keys"):
        attribute_to_json({1: "a"})


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d.pop("enqueueId"), "enqueueId"),
    (lambda d: d.update(enqueueId="nope"), "UUID"),
    (lambda d: d.update(recipients="a@x.org"), "recipients"),
    (lambda d: d.update(recipients=["not-an-address"]), "recipients"),
    (lambda d: d.update(sender=5), "sender"),
    (lambda d: d.update(lastUpdated="yesterday"), "ISO"),
    (lambda d: d.update(attributes={"a": "not json"}), "attribute 'a'"),
    (lambda d: d.update(perRecipientHeaders={"a@x.org": {"X": ["v"]}}), "perRecipientHeaders"),
    (lambda d: d.pop("bodyBlobId"), "bodyBlobId"),
    (lambda d: d.update(state=3), "state"),
])
def test_bad_references_are_clear_errors(mutate, message):
    doc = json.loads(serialize_reference(MailReference(uuid.uuid4(), stored_mail())))
    mutate(doc)
    with pytest.raises(SerializationError, match=message):
        deserialize_reference(json.dumps(doc))


@pytest.mark.parametrize("raw", [b"", b"\xff\xfe", b"[1, 2]", b"null"])
def test_garbage_bodies_are_clear_errors(raw):
    with pytest.raises(SerializationError):
        deserialize_reference(raw)


def test_java_string_hash_and_buckets():
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("") == 0
    assert java_string_hash("\U0001F600") == (0xD83D * 31 + 0xDE00)  # UTF-16 code units
    assert bucket_of("hello", 1) == 0
    assert bucket_of("hello", 7) == 99162322 % 7
    assert bucket_of("polygenelubricants", 3) == 2  # Java: abs(-2147483648 % 3) = abs(-2)


def test_slices():
    moment = datetime(2026, 11, 22, 1, 59, 59, 999000, tzinfo=UTC)
    assert slice_start(moment, timedelta(hours=1)) == datetime(2026, 11, 22, 1, tzinfo=UTC)
    assert slice_start(moment, timedelta(minutes=7)) == datetime(2026, 11, 22, 1, 58, tzinfo=UTC)  # epoch-aligned


def test_rabbitmq_names():
    n = QueueNames("spool")
    assert (n.exchange, n.workqueue, n.dead_letter_exchange, n.dead_letter_queue) == (
        "JamesMailQueue-exchange-spool", "JamesMailQueue-workqueue-spool",
        "JamesMailQueue-dead-letter-exchange-spool", "JamesMailQueue-dead-letter-queue-spool")
    assert n.delay_queue(1500) == "JamesMailQueue-delay-spool-1500"
    assert n.delay_of("JamesMailQueue-delay-spool-1500") == 1500
    assert QueueNames("a").delay_of("JamesMailQueue-delay-a-1-5") is None
    assert queue_name_of_workqueue("JamesMailQueue-workqueue-outgoing") == "outgoing"
    assert queue_name_of_workqueue("other") is None
    with pytest.raises(ValueError):
        validate_queue_name("with space")
