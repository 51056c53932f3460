"""IntakeSMTP parses MAIL/RCPT paths exactly as the aiosmtpd it replaces the parser of."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from aiosmtpd.smtp import SMTP

from mailserver.smtp.server import IntakeSMTP

PATHS = ["", "<>", "<alice@example.com>", "<alice@example.com> SIZE=1000 BODY=8BITMIME", "alice@example.com",
         '<"quoted local"@example.com>', "<@relay.example:alice@example.com>", "<alice@[192.0.2.1]>", "<alice>",
         "<alice@example.com", "not an address", "<a@b@c>", " <spaced@example.com>", "<" + "x" * 70 + "@example.com>"]


@pytest.mark.parametrize("limit", [0, 64])
@pytest.mark.parametrize("path", PATHS)
def test_a_path_parses_as_aiosmtpd_parses_it(path, limit):
    session = SimpleNamespace(local_part_limit=limit)
    assert IntakeSMTP._getaddr(session, path) == SMTP._getaddr(session, path)
