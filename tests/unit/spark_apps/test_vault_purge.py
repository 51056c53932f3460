"""The vault purge's executor-side pure parts: blob ids from payloads, slices, owner groups, storage batches."""

from __future__ import annotations

from collections import Counter

import pytest

from mailserver.model.address import Username
from mailserver.vault.model import StorageInformation, StoredDeletedMessage
from spark_apps.common.vault_purge import Entry, blob_id_of, owner_groups, slice_of, storage_batches
from tests.contract.vault_contract import deleted

MONTH = "deleted-messages-2024-06-01"


def test_the_blob_id_is_read_from_james_payload_and_none_when_it_cannot_be():
    payload = StoredDeletedMessage(deleted(Username.of("alice@example.com"), subject='a "blobId": "not-it"'),
                                   StorageInformation(MONTH, "the-blob")).payload()
    assert blob_id_of(payload) == "the-blob"
    for unreadable in (None, "", "{", "[]", '{"storageInformation": {}}', '{"storageInformation": {"blobId": 7}}',
                       '{"storageInformation": {"blobId": ""}}'):
        assert blob_id_of(unreadable) is None, unreadable


def test_a_partition_always_falls_in_the_same_slice_and_owners_spread_over_all():
    owners = [f"owner{n}@example.com" for n in range(400)]
    slices = [slice_of(MONTH, owner, 8) for owner in owners]
    assert slices == [slice_of(MONTH, owner, 8) for owner in owners]   # no per-process hash seed
    assert set(slices) == set(range(8))
    assert max(Counter(slices).values()) < 2 * 400 / 8
    # the month is part of the key: an owner's months do not all land in one slice
    assert [slice_of(MONTH, o, 8) for o in owners] != [slice_of("deleted-messages-2024-07-01", o, 8) for o in owners]


def test_owners_are_grouped_per_month_at_most_size_each_once():
    pairs = [("deleted-messages-2024-07-01", f"o{n}") for n in range(5)] + [(MONTH, f"o{n}") for n in range(3)]
    groups = owner_groups(pairs, size=2)
    assert groups == [(MONTH, ["o0", "o1"]), (MONTH, ["o2"]), ("deleted-messages-2024-07-01", ["o0", "o1"]),
                      ("deleted-messages-2024-07-01", ["o2", "o3"]), ("deleted-messages-2024-07-01", ["o4"])]
    assert owner_groups([]) == []


def test_storage_batches_stay_under_both_limits_and_keep_every_entry_in_order():
    entries = [Entry(f"owner{n % 7}@example.com", f"message-{n:05d}", None, n) for n in range(500)]
    batches = storage_batches(entries, max_bytes=1000, max_statements=20)
    assert [e for batch in batches for e in batch] == entries
    for batch in batches:
        assert len(batch) <= 20
        assert sum(len(e.owner) + len(e.message_id) + 8 for e in batch) <= 1000
    assert len(batches) == 500 // 20   # 20 entries of 39 bytes: the statement limit binds first
    bytes_bound = storage_batches(entries, max_bytes=180, max_statements=64)
    assert all(len(batch) == 4 for batch in bytes_bound)   # 4 x 39 bytes fit in 180, 5 do not


def test_an_entry_heavier_than_the_byte_limit_still_gets_a_batch_of_its_own():
    heavy = Entry("o" * 300, "m", None, None)
    light = Entry("a", "b", None, None)
    assert storage_batches([light, heavy, light], max_bytes=100) == [[light], [heavy], [light]]


@pytest.mark.parametrize("slices", [1, 3, 4096])
def test_slices_are_within_range(slices):
    assert all(0 <= slice_of(MONTH, f"u{n}", slices) < slices for n in range(100))
