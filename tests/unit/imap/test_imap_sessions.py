"""Thunderbird-style sessions through imaplib and imapclient on the memory mailbox layer."""

from __future__ import annotations

from tests.unit.imap.conftest import OTHER, PASSWORD, USER
from tests.unit.imap.imap_sessions import imapclient_session, imaplib_session, quota_of


def test_imaplib_session(world):
    imaplib_session(world.client(), world.ctx.manager, USER, quota_of(world.ctx.quota, USER))


def test_imapclient_session(world):
    imapclient_session("127.0.0.1", world.port, OTHER, PASSWORD, world.ctx.manager, quota_of(world.ctx.quota, OTHER))
    assert (world.metrics.registry.get_sample_value("IMAP_SELECT_sum") or 0) > 0
