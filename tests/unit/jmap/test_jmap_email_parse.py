"""Email/parse (RFC 8621 4.9) on uploaded blobs and messages, as James's EmailParseMethod answers."""

from __future__ import annotations

import io

import pytest

from tests.support.jmap_world import MIXED, JmapClient, World


@pytest.fixture
def jmap(world: World) -> JmapClient:
    return JmapClient(world)


def upload(world: World, data: bytes) -> str:
    return world.uploads.upload(world.user, "message/rfc822", io.BytesIO(data)).jmap_blob_id


def test_rfc_example_parses_an_uploaded_message(jmap, world):
    blob = upload(world, MIXED)
    answer = jmap.call("Email/parse", blobIds=[blob], fetchTextBodyValues=True)
    email = answer["parsed"][blob]
    assert set(answer) == {"accountId", "parsed"}   # notFound / notParsable left out when empty
    assert email["blobId"] == blob and email["size"] == len(MIXED)
    assert email["subject"] == "Quarterly résults"
    assert email["from"] == [{"name": "Joe Bloggs", "email": "joe@example.com"}]
    assert email["messageId"] == ["q1@example.com"] and email["inReplyTo"] == ["q0@example.com"]
    assert email["hasAttachment"] is True and email["preview"] == "The figures are in."
    assert [p["type"] for p in email["attachments"]] == ["application/pdf"]
    assert email["bodyValues"][email["textBody"][0]["partId"]]["value"].startswith("The figures are in.")
    # a parsed Email is in no mailbox: these are left out, as James
    assert not {"id", "threadId", "mailboxIds", "keywords", "receivedAt"} & set(email)


def test_properties_and_body_properties_are_chosen(jmap, world):
    blob = upload(world, MIXED)
    email = jmap.call("Email/parse", blobIds=[blob], properties=["subject", "attachments"],
                      bodyProperties=["partId", "type"])["parsed"][blob]
    assert email == {"subject": "Quarterly résults", "attachments": [{"partId": "3", "type": "application/pdf"}]}


def test_a_stored_message_parses_by_its_blob_id(jmap, world):
    message = world.deliver(MIXED)
    assert jmap.call("Email/parse", blobIds=[message], properties=["size"])["parsed"] == {
        message: {"size": len(MIXED)}}


def test_unknown_blobs_are_not_found(jmap, world):
    blob = upload(world, MIXED)
    answer = jmap.call("Email/parse", blobIds=[blob, "uploads-00000000-0000-0000-0000-000000000000", "junk"],
                       properties=["size"])
    assert list(answer["parsed"]) == [blob]
    assert answer["notFound"] == ["uploads-00000000-0000-0000-0000-000000000000", "junk"]


@pytest.mark.parametrize("arguments, error", [
    ({}, "invalidArguments"),                                      # blobIds is required
    ({"blobIds": "x"}, "invalidArguments"),
    ({"blobIds": [], "properties": ["nope"]}, "invalidArguments"),
    ({"blobIds": [], "bodyProperties": ["nope"]}, "invalidArguments"),
    ({"blobIds": [], "fetchAllBodyValues": "yes"}, "invalidArguments"),
    ({"blobIds": [], "unknown": 1}, "invalidArguments"),
    ({"blobIds": ["a", "b", "c", "d", "e", "f"]}, "requestTooLarge"),   # James's default of 5 per call
])
def test_errors(jmap, world, arguments, error):
    assert jmap.error("Email/parse", accountId=world.account, **arguments)["type"] == error


def test_wrong_account(jmap):
    assert jmap.error("Email/parse", accountId="nope", blobIds=[])["type"] == "accountNotFound"
