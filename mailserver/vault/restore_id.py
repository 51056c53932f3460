"""The message id a restore gives the copy of one vault entry: the same every time, for one owner.

A restore run again (an Airflow retry, a second run of the same query) must not append a second
copy of a message it already restored. As local delivery does (``mailets/delivery_id.py``), the
copy's message id is derived, not drawn: a time-based UUID (the store wants TIMEUUIDs) whose time
is the vault message id's own and whose clock sequence and node come from a hash of the owner and
that id. Before appending, the restore looks the id up: found means already restored.
"""

from __future__ import annotations

import hashlib
import uuid

from mailserver.model.address import Username
from mailserver.model.ids import MessageId


def restored_message_id(owner: Username, vault_message_id: MessageId) -> MessageId:
    """Pure: the id of the restored copy of ``vault_message_id`` in ``owner``'s restore mailbox."""
    digest = hashlib.sha256(f"vault-restore\0{owner.value}\0{vault_message_id}".encode()).digest()
    timestamp = vault_message_id.value.time   # 60 bits, 100 ns since 1582-10-15: the original's
    clock_seq = int.from_bytes(digest[:2], "big") & 0x3FFF
    node = int.from_bytes(digest[2:8], "big") | 0x010000000000   # multicast bit: not a hardware address
    value = uuid.UUID(fields=(timestamp & 0xFFFFFFFF, (timestamp >> 32) & 0xFFFF,
                              ((timestamp >> 48) & 0x0FFF) | 0x1000, 0x80 | (clock_seq >> 8), clock_seq & 0xFF, node))
    return MessageId.of(value)
