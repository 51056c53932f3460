"""The restored copy's message id: the same for one owner and vault entry, different otherwise, a TIMEUUID."""

from __future__ import annotations

from mailserver.model.address import Username
from mailserver.model.ids import MessageId
from mailserver.vault.restore_id import restored_message_id

ALICE, BOB = Username.of("alice@example.com"), Username.of("bob@example.com")


def test_same_owner_and_entry_give_the_same_id_every_time():
    entry = MessageId.generate()
    assert restored_message_id(ALICE, entry) == restored_message_id(ALICE, MessageId.of(str(entry)))


def test_other_owners_and_entries_give_other_ids_never_the_original():
    first, second = MessageId.generate(), MessageId.generate()
    ids = {restored_message_id(ALICE, first), restored_message_id(BOB, first), restored_message_id(ALICE, second)}
    assert len(ids) == 3
    assert first not in ids and second not in ids


def test_a_timeuuid_with_the_original_time():
    entry = MessageId.generate()
    restored = restored_message_id(ALICE, entry)
    assert restored.value.version == 1
    assert restored.value.time == entry.value.time
