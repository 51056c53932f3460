"""QUOTA (RFC 9208 / RFC 2087 as James serves it): GETQUOTAROOT and GETQUOTA on the user's quota root."""

from __future__ import annotations

from mailserver.imap.commands_quota import quota_lines
from mailserver.model.address import Username
from mailserver.model.quota import QuotaLimits, QuotaRoot, QuotaUsage
from tests.unit.imap.conftest import OTHER, USER
from tests.unit.imap.raw_client import RawImap
from tests.unit.imap.test_imap_protocol import login

ROOT = QuotaRoot.for_user(Username.of(USER))


def test_only_limited_resources_are_reported_storage_in_kib_rounded_down():
    assert quota_lines(ROOT, QuotaUsage(6, 2047), QuotaLimits(count=7, size=5 * 1024 * 1024)) == (
        f"* QUOTA {ROOT.value} (MESSAGE 6 7)\r\n* QUOTA {ROOT.value} (STORAGE 1 5120)\r\n".encode())
    assert quota_lines(ROOT, QuotaUsage(6, 2047), QuotaLimits(count=None, size=-1)) == b""


def test_getquotaroot_and_getquota_over_a_session(world):
    world.ctx.manager.quota.set_user_limits(ROOT, QuotaLimits(count=10, size=None))
    raw = RawImap(world.port)
    login(raw)
    assert b" QUOTA=RES-STORAGE" in raw.command(b"c", b"CAPABILITY")[0]
    raw.send(b"a APPEND INBOX {12+}\r\nSubject: x\r\n\r\n")
    assert raw.until_tagged(b"a")[-1].startswith(b"a OK")
    root = ROOT.value.encode()
    assert raw.command(b"r", b"GETQUOTAROOT inbox") == [
        b"* QUOTAROOT INBOX " + root + b"\r\n", b"* QUOTA " + root + b" (MESSAGE 1 10)\r\n",
        b"r OK GETQUOTAROOT completed\r\n"]
    assert raw.command(b"q", b"GETQUOTA " + root) == [b"* QUOTA " + root + b" (MESSAGE 1 10)\r\n",
                                                       b"q OK GETQUOTA completed\r\n"]
    other = QuotaRoot.for_user(Username.of(OTHER)).value.encode()
    assert raw.command(b"o", b"GETQUOTA " + other)[-1].startswith(b"o NO [NOPERM]")
    assert raw.command(b"m", b"GETQUOTAROOT missing")[-1].startswith(b"m NO [NONEXISTENT]")
    assert raw.command(b"s", b"SETQUOTA " + root + b" (STORAGE 1)")[-1].startswith(b"s NO [NOPERM]")
