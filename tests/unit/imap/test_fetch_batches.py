"""A FETCH that needs no message body renders its messages together: one hand-off to the server's
thread pool and one write for the lot, not one a message; a message gone meanwhile is still skipped.
A small message body is read in that same call rather than streamed in several."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from tests.unit.imap.conftest import World, evented_world
from tests.unit.imap.imap_sessions import NOTE, REPORT
from tests.unit.imap.test_imap_protocol import INBOX


@pytest.fixture
def world() -> Iterator[World]:
    with evented_world() as w:
        yield w


def test_an_envelope_fetch_of_several_messages_is_one_pool_call(world, monkeypatch):
    client = world.client()
    for _ in range(4):
        client.append("INBOX", None, None, NOTE)
    client.select("INBOX")
    pool = world.thread.server.pool
    submitted = []
    submit = pool.submit
    monkeypatch.setattr(pool, "submit", lambda *args, **kwargs: submitted.append(args) or submit(*args, **kwargs))

    status, data = client.fetch("1:4", "(UID ENVELOPE)")

    assert status == "OK"
    assert [line.split(b" (")[0] for line in data] == [b"1", b"2", b"3", b"4"]
    assert all(b'"lunch"' in line for line in data)
    assert len(submitted) == 1


def test_an_envelope_fetch_skips_a_message_expunged_elsewhere_and_answers_expungeissued(world):
    manager = world.ctx.manager
    client = world.client()
    client.append("INBOX", None, None, NOTE)
    client.append("INBOX", None, None, REPORT)
    client.select("INBOX")
    manager.set_flags(INBOX, Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD, [1])
    manager.expunge(INBOX)

    status, data = client.fetch("1:2", "(ENVELOPE)")

    assert status == "NO" and data[0].startswith(b"[EXPUNGEISSUED]")
    envelopes = client.untagged_responses.get("FETCH", [])
    assert len(envelopes) == 1 and b"Quarterly" in envelopes[0]


def test_a_small_body_fetch_is_one_pool_call(world, monkeypatch):
    client = world.client()
    client.append("INBOX", None, None, REPORT)
    client.select("INBOX")
    client.fetch("1", "(ENVELOPE)")   # the header is known from here on
    pool = world.thread.server.pool
    submitted = []
    submit = pool.submit
    monkeypatch.setattr(pool, "submit", lambda *args, **kwargs: submitted.append(args) or submit(*args, **kwargs))

    status, data = client.uid("FETCH", "1", "(BODY.PEEK[])")

    assert status == "OK" and data[0][1] == REPORT
    assert len(submitted) == 1
