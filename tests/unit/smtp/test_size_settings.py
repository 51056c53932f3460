"""The size settings (SMTP message size, IMAP literals) read James's sizes, and a limit is 0 or more bytes."""

from __future__ import annotations

import pytest

from mailserver.model.james_units import MIB
from mailserver.runtime.settings import ServeSettings, SettingsError
from mailserver.smtp.config import MAX_MESSAGE_SIZE, SmtpConfig


@pytest.mark.parametrize(("text", "expected"), [
    ("26214400", 25 * MIB), ("25m", 25 * MIB), ("25M", 25 * MIB), ("512K", 512 * 1024), ("1G", 1024**3),
    ("100b", 100), ("0", 0), (" 10m ", 10 * MIB),   # the environment's spaces are not the value's
])
def test_sizes_as_james_reads_them(text, expected):
    assert ServeSettings.from_env({"MAILSERVER_SMTP_MAX_MESSAGE_SIZE": text}).smtp.max_message_size == expected


@pytest.mark.parametrize("text", ["25mb", "25MiB", "25 M", "1.5G", "lots", "unlimited", "-1", "-5K"])
def test_a_size_that_is_not_a_limit_stops_the_server_naming_the_variable(text):
    with pytest.raises(SettingsError, match=f"MAILSERVER_SMTP_MAX_MESSAGE_SIZE: {text!r}"):
        ServeSettings.from_env({"MAILSERVER_SMTP_MAX_MESSAGE_SIZE": text})


def test_imap_append_follows_the_smtp_limit_and_both_default_to_25_mib():
    assert MAX_MESSAGE_SIZE == SmtpConfig().max_message_size == 25 * MIB
    defaults = ServeSettings.from_env({})
    assert defaults.smtp.max_message_size == defaults.imap.max_append_size == MAX_MESSAGE_SIZE
    assert ServeSettings.from_env({"MAILSERVER_SMTP_MAX_MESSAGE_SIZE": "10M"}).imap.max_append_size == 10 * MIB
