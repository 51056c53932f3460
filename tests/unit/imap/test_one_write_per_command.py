"""A command's untagged responses go out with its tagged one, in one socket write (each write is a
system call and a wake-up of the client); updates pushed during IDLE still go out as they come."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.imap.conftest import World, evented_world
from tests.unit.imap.imap_sessions import NOTE
from tests.unit.imap.raw_client import RawImap
from tests.unit.imap.test_imap_protocol import INBOX, login


@pytest.fixture
def world() -> Iterator[World]:
    with evented_world() as w:
        yield w


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """What the server's sessions write to their sockets, one item a write."""
    written: list[bytes] = []
    write = asyncio.StreamWriter.write

    def recorded(self: asyncio.StreamWriter, data: Any) -> None:
        written.append(bytes(data))
        write(self, data)
    monkeypatch.setattr(asyncio.StreamWriter, "write", recorded)
    return written


@pytest.mark.parametrize("command", [b"SELECT INBOX", b"FETCH 1:3 (UID FLAGS ENVELOPE)", b"UID FETCH 2 (BODY.PEEK[])",
                                     b"SEARCH UNSEEN", b"UID STORE 1:3 +FLAGS (\\Flagged)", b"NOOP"])
def test_a_command_with_untagged_responses_is_one_write(world, writes, command):
    raw = RawImap(world.port)
    login(raw)   # creates INBOX
    for _ in range(3):
        world.ctx.manager.append(INBOX, NOTE)
    raw.command(b"s", b"SELECT INBOX")
    world.ctx.manager.append(INBOX, NOTE)   # an update for the next command to report too
    writes.clear()

    lines = raw.command(b"c", command)

    assert lines[-1].startswith(b"c OK") and len(lines) > 1
    assert writes == [b"".join(lines)]


def test_idle_still_pushes_each_update_at_once(world, writes):
    raw = RawImap(world.port)
    login(raw)
    raw.command(b"s", b"SELECT INBOX")
    raw.send(b"i IDLE\r\n")
    assert raw.line().startswith(b"+")

    world.ctx.manager.append(INBOX, NOTE)

    assert raw.line() == b"* 1 EXISTS\r\n"
    raw.send(b"DONE\r\n")
    assert raw.until_tagged(b"i")[-1].startswith(b"i OK")
