"""The message id a local delivery gives the copy of a mail for one recipient: the same every time.

A spool item delivered again after a crash (the process died after the mailbox write, before the
acknowledgement) must not store a second copy. The id is a time-based UUID (the store wants
TIMEUUIDs) built from the mail's name and the recipient: its time is the mail's creation time,
which James's mail names carry (``Mail<epochMillis>-...``), and its clock sequence and node come
from a hash of both. Before appending, the delivery looks the id up: found means already stored.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid

from mailserver.model.address import MailAddress
from mailserver.model.ids import MessageId

_MAIL_MILLIS = re.compile(r"Mail(\d{12,14})-")
_GREGORIAN_OFFSET = 0x01B21DD213814000   # 100 ns intervals from 1582-10-15 to 1970-01-01


def delivery_message_id(mail_name: str, recipient: MailAddress) -> MessageId | None:
    """The deterministic id, or None when the name carries no creation time (then no de-duplication)."""
    found = _MAIL_MILLIS.search(mail_name)
    if found is None:
        return None
    millis = int(found.group(1))
    if millis > time.time() * 1000 + 86_400_000:   # not a plausible creation time
        return None
    digest = hashlib.sha256(f"{mail_name}\0{str(recipient).lower()}".encode()).digest()
    timestamp = _GREGORIAN_OFFSET + millis * 10_000 + int.from_bytes(digest[:2], "big") % 10_000
    clock_seq = int.from_bytes(digest[2:4], "big") & 0x3FFF
    node = int.from_bytes(digest[4:10], "big") | 0x010000000000   # multicast bit: not a hardware address
    value = uuid.UUID(fields=(timestamp & 0xFFFFFFFF, (timestamp >> 32) & 0xFFFF,
                              ((timestamp >> 48) & 0x0FFF) | 0x1000, 0x80 | (clock_seq >> 8), clock_seq & 0xFF, node))
    return MessageId.of(value)
