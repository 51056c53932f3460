"""What one IMAP command asks of the storage: each read counts on Cassandra and S3 (bench/imap_requests.py
counts them there), so a read that is not needed must not come back. Counted at the stores' public
methods of the memory layer: one call is one CQL statement or one S3 request on the real adapters."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mailserver.mailbox.wiring import MailboxContext
from mailserver.model.address import Username
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.mailbox import MailboxPath
from tests.unit.imap.conftest import USER, World, evented_world
from tests.unit.imap.imap_sessions import NOTE, REPORT
from tests.unit.imap.raw_client import RawImap
from tests.unit.imap.test_imap_protocol import INBOX, login


class Calls:
    """The arguments of every call to the watched store methods, by method name."""

    def __init__(self) -> None:
        self.by_name: dict[str, list[tuple]] = {}

    def of(self, name: str) -> list[tuple]:
        return self.by_name.get(name, [])

    def clear(self) -> None:
        self.by_name.clear()

    def watch(self, monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> None:
        method: Callable[..., Any] = getattr(owner, name)

        def recorded(*args: Any, **kwargs: Any) -> Any:
            self.by_name.setdefault(name, []).append(args)
            return method(*args, **kwargs)
        monkeypatch.setattr(owner, name, recorded)


@pytest.fixture
def world() -> Iterator[World]:
    with evented_world() as w:
        yield w


@pytest.fixture
def calls(world, monkeypatch: pytest.MonkeyPatch) -> Calls:
    ctx: MailboxContext = world.ctx
    watched = Calls()
    watched.watch(monkeypatch, ctx.mailboxes, "find_by_path")
    watched.watch(monkeypatch, ctx.messages, "list")
    watched.watch(monkeypatch, ctx.blobs, "read_stream")
    return watched


def session(world, messages: int) -> RawImap:
    raw = RawImap(world.port)
    login(raw)   # creates INBOX
    for _ in range(messages):
        world.ctx.manager.append(INBOX, REPORT)
    assert raw.command(b"s", b"SELECT INBOX")[-1].startswith(b"s OK")
    return raw


def test_select_looks_the_mailbox_up_by_its_path_once(world, calls):
    raw = session(world, messages=2)
    calls.clear()

    assert raw.command(b"s2", b"SELECT INBOX")[-1].startswith(b"s2 OK")

    assert len(calls.of("find_by_path")) == 1


def test_append_looks_the_mailbox_up_by_its_path_once(world, calls):
    raw = session(world, messages=0)
    calls.clear()

    raw.send(b"a APPEND INBOX {%d}\r\n" % len(NOTE))
    assert raw.line().startswith(b"+")
    raw.send(NOTE + b"\r\n")
    assert raw.until_tagged(b"a")[-1].startswith(b"a OK [APPENDUID")

    assert len(calls.of("find_by_path")) == 1


def test_a_body_fetch_reads_only_the_body_blob_once_the_header_is_known(world, calls):
    raw = session(world, messages=1)
    raw.command(b"e", b"FETCH 1 (ENVELOPE)")   # reads the header, which the server keeps
    body_blob = world.ctx.manager.body_blob_id(world.ctx.manager.get_messages(INBOX)[0].message_id)
    calls.clear()

    lines = raw.command(b"f", b"UID FETCH 1 (BODY.PEEK[])")

    assert b"".join(lines[1:-2]) == REPORT
    assert [str(blob_id) for _, blob_id in calls.of("read_stream")] == [body_blob]


def test_store_reads_the_span_of_its_uids_not_the_whole_mailbox(world, calls):
    raw = session(world, messages=5)
    calls.clear()

    assert raw.command(b"t", b"UID STORE 4:5 +FLAGS (\\Flagged)")[-1].startswith(b"t OK")
    assert raw.command(b"u", b"UID STORE 5 (UNCHANGEDSINCE 100) +FLAGS (\\Seen)")[-1].startswith(b"u OK")

    spans = [args[1:] for args in calls.of("list")]
    assert spans and all(span in ((4, 5), (5, 5)) for span in spans), spans


def test_store_of_a_change_reads_neither_the_path_nor_the_messages(world, calls):
    raw = session(world, messages=3)
    calls.clear()

    lines = raw.command(b"t", b"UID STORE 2:3 +FLAGS (\\Flagged)")

    assert lines[-1].startswith(b"t OK") and len(lines) == 3   # the two FETCH lines
    assert calls.of("find_by_path") == [] and calls.of("list") == []
    assert [m.flags.has(SystemFlag.FLAGGED) for m in world.ctx.manager.get_messages(INBOX)] == [False, True, True]


def test_store_after_a_change_the_session_has_not_heard_of_keeps_that_change(world):
    raw = session(world, messages=1)
    # Another writer: the session learns of it only at its next report, after its STORE.
    world.ctx.manager.set_flags(INBOX, Flags.of(SystemFlag.SEEN), FlagsUpdateMode.ADD, [1])

    lines = raw.command(b"t", b"UID STORE 1 +FLAGS (\\Flagged)")

    assert lines[-1].startswith(b"t OK")
    stored = world.ctx.manager.get_messages(INBOX)[0].flags
    assert stored.has(SystemFlag.SEEN) and stored.has(SystemFlag.FLAGGED)
    assert b"\\Seen" in lines[0] and b"\\Flagged" in lines[0]


def test_store_of_a_flag_the_session_wrongly_believes_set_still_sets_it(world):
    raw = session(world, messages=1)
    assert raw.command(b"t", b"UID STORE 1 +FLAGS (\\Flagged)")[-1].startswith(b"t OK")
    # Another writer takes it off; the session's copy still says \Flagged.
    world.ctx.manager.set_flags(INBOX, Flags.of(SystemFlag.FLAGGED), FlagsUpdateMode.REMOVE, [1])

    assert raw.command(b"u", b"UID STORE 1 +FLAGS (\\Flagged)")[-1].startswith(b"u OK")

    assert world.ctx.manager.get_messages(INBOX)[0].flags.has(SystemFlag.FLAGGED)


def test_store_in_a_mailbox_another_session_deleted_answers_nonexistent(world):
    raw = RawImap(world.port)
    login(raw)
    box = MailboxPath.of(Username.of(USER), "box")
    world.ctx.manager.create_mailbox(box)
    world.ctx.manager.append(box, NOTE)
    assert raw.command(b"s", b"SELECT box")[-1].startswith(b"s OK")
    world.ctx.manager.delete_mailbox(box)

    assert raw.command(b"t", b"UID STORE 1 +FLAGS (\\Flagged)") == [b"t NO [NONEXISTENT] mailbox box not found\r\n"]
