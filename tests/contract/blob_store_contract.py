"""Behaviour every blob store adapter must have (memory and S3), in both of James's modes.

Subclasses provide one fixture, ``make_blob_store``: a function from a ``BlobIdFactory`` to a
store of the adapter, every store it makes on the same backend and buckets. From it come
``blob_store`` (each general test runs twice: without deduplication, James's sample setting, and
with it), ``passthrough_blob_store``, ``dedup_blob_store`` (generation-aware ids at a fixed clock)
and ``legacy_blob_store`` (the bare-hash ids this project wrote before generations). Each test
writes into its own bucket (``bucket``), deleted afterwards, so a shared S3 server is fine.
"""

from __future__ import annotations

import base64
import hashlib
import io
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from mailserver.blob.api import (
    BlobId,
    BlobIdFactory,
    BlobNotFound,
    BlobStore,
    BucketName,
    GenerationAwareBlobIdFactory,
    HashBlobIdFactory,
    RandomBlobIdFactory,
    StoragePolicy,
)

MESSAGE_HEADER = b"From: alice@example.com\r\nTo: bob@example.com\r\nSubject: hello\r\n\r\n"
BINARY = b"line one\r\nline two\n\rlone CR\r\x00NUL\x00\r\n\r\n" + bytes(range(256)) * 4 + b"\r\n.\r\n"

INVALID_BUCKETS = ["", "ab", "x" * 64, "Upper-case", "under_score", "-starts-with-hyphen", "ends-with-hyphen-",
                   "two..dots", "192.168.1.1", "has space", "xn--reserved", "ends-s3alias"]
INVALID_BLOB_IDS = ["", "/absolute", "../escape", "a/../b", "a/..", ".", "a/./b", "a//b", "trailing/",
                    "nul\x00byte", "line\nfeed", "x" * 1025]


# The instant of James's GenerationAwareBlobIdTest, whose expected generation is 628 (30-day generations).
JAMES_TEST_NOW = datetime(2021, 8, 19, 10, 15, 30, tzinfo=UTC)


def hash_id(content: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(content).digest()).decode()


def dedup_id(content: bytes) -> str:
    """The id James's DeDuplicationBlobStore gives ``content`` at JAMES_TEST_NOW (family 1)."""
    return f"1_628_{hash_id(content)}"


def deduplicating_ids() -> GenerationAwareBlobIdFactory:
    return GenerationAwareBlobIdFactory(clock=lambda: JAMES_TEST_NOW)


def is_random_id(blob_id: BlobId) -> bool:
    return uuid.UUID(str(blob_id)).version == 4


def expected_id_ok(store: BlobStore, blob_id: BlobId, content: bytes) -> bool:
    """The id of a save in the store's mode: the content's generation-aware id, else a random UUID."""
    return str(blob_id) == dedup_id(content) if store.deduplicating else is_random_id(blob_id)


def chunks(content: bytes, size: int = 7):
    for i in range(0, len(content), size):
        yield content[i:i + size]


class BlobStoreContract:
    @pytest.fixture
    def make_blob_store(self) -> Callable[[BlobIdFactory], BlobStore]:
        raise NotImplementedError

    @pytest.fixture(params=["passthrough", "deduplication"])
    def blob_store(self, request, make_blob_store) -> BlobStore:
        return make_blob_store(RandomBlobIdFactory() if request.param == "passthrough" else deduplicating_ids())

    @pytest.fixture
    def passthrough_blob_store(self, make_blob_store) -> BlobStore:
        return make_blob_store(RandomBlobIdFactory())

    @pytest.fixture
    def dedup_blob_store(self, make_blob_store) -> BlobStore:
        return make_blob_store(deduplicating_ids())

    @pytest.fixture
    def legacy_blob_store(self, make_blob_store) -> BlobStore:
        return make_blob_store(HashBlobIdFactory())

    @pytest.fixture
    def bucket(self, passthrough_blob_store):
        name = BucketName(f"b-{uuid.uuid4().hex[:12]}")
        yield name
        passthrough_blob_store.delete_bucket(name)

    # ---------------------------------------------------------------- save / read
    @pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "file", "iterator", "list"])
    def test_save_then_read_round_trips_every_input_kind(self, blob_store, bucket, kind):
        content = MESSAGE_HEADER + b"body " * 100
        data = {"bytes": lambda: content, "bytearray": lambda: bytearray(content),
                "memoryview": lambda: memoryview(content), "file": lambda: io.BytesIO(content),
                "iterator": lambda: chunks(content), "list": lambda: list(chunks(content, 1000))}[kind]()
        blob_id = blob_store.save(bucket, data)
        assert isinstance(blob_id, BlobId)
        assert blob_store.read(bucket, blob_id) == content

    def test_read_accepts_plain_strings_for_bucket_and_id(self, blob_store, bucket):
        blob_id = blob_store.save(bucket, b"plain")
        assert blob_store.read(bucket.value, str(blob_id)) == b"plain"

    def test_empty_content(self, blob_store, bucket):
        blob_id = blob_store.save(bucket, b"")
        assert expected_id_ok(blob_store, blob_id, b"")
        assert blob_store.read(bucket, blob_id) == b""
        assert blob_store.read(bucket, blob_store.save(bucket, iter([]))) == b""

    def test_binary_content_with_crlf_and_nul_is_unchanged(self, blob_store, bucket):
        assert blob_store.read(bucket, blob_store.save(bucket, BINARY)) == BINARY
        assert blob_store.read(bucket, blob_store.save(bucket, chunks(BINARY, 3))) == BINARY

    def test_content_past_the_spool_threshold_and_one_part(self, blob_store, bucket):
        block = hashlib.sha256(b"seed").digest() * 2048  # 64 KiB
        content = block * 96 + b"tail"  # 6 MiB: spooled to disk, and a 2-part upload on S3
        blob_id = blob_store.save(bucket, chunks(content, 64 * 1024))
        assert expected_id_ok(blob_store, blob_id, content)
        assert hashlib.sha256(blob_store.read(bucket, blob_id)).digest() == hashlib.sha256(content).digest()

    def test_read_stream_reads_in_chunks(self, blob_store, bucket):
        content = bytes(range(256)) * 800 + b"end"  # 200 KiB
        blob_id = blob_store.save(bucket, content)
        sizes, parts = [], []
        with blob_store.read_stream(bucket, blob_id) as stream:
            while part := stream.read(4096):
                sizes.append(len(part))
                parts.append(part)
        assert stream.closed
        assert b"".join(parts) == content
        assert max(sizes) <= 4096 and len(sizes) >= len(content) // 4096

    def test_save_default_bucket(self, blob_store):
        blob_id = blob_store.save(blob_store.default_bucket, MESSAGE_HEADER)
        assert blob_store.read(blob_store.default_bucket, blob_id) == MESSAGE_HEADER

    @pytest.mark.parametrize("policy", list(StoragePolicy))
    def test_every_storage_policy_is_accepted_and_does_not_change_the_id(self, blob_store, bucket, policy):
        blob_id = blob_store.save(bucket, b"policy", policy)
        assert expected_id_ok(blob_store, blob_id, b"policy")
        assert blob_store.read(bucket, blob_id) == b"policy"

    @pytest.mark.parametrize("data", ["text", 42, None, [b"ok", "text"]])
    def test_non_bytes_content_is_refused_and_nothing_is_written(self, blob_store, bucket, data):
        with pytest.raises(TypeError):
            blob_store.save(bucket, data)
        assert list(blob_store.list_blobs(bucket)) == []
        assert bucket not in blob_store.list_buckets()

    # ---------------------------------------------------------------- ids / deduplication
    def test_same_content_gives_the_same_id_and_is_stored_once(self, dedup_blob_store, bucket):
        store = dedup_blob_store
        first = store.save(bucket, b"same bytes", StoragePolicy.SIZE_BASED)
        second = store.save(bucket, io.BytesIO(b"same bytes"), StoragePolicy.LOW_COST)
        assert first == second
        assert store.deduplicating
        assert list(store.list_blobs(bucket)) == [first]

    def test_deduplicated_ids_are_james_generation_aware_ids(self, dedup_blob_store, bucket):
        """James's DeduplicationBlobStoreContract: "toto" hashes to MfemXjF...; its GenerationAwareBlobIdTest:
        2021-08-19T10:15:30Z is generation 628 of the default configuration (family 1, 30 days)."""
        blob_id = dedup_blob_store.save(bucket, b"toto")
        assert str(blob_id) == "1_628_MfemXjFVhqwZi9eYtmKc5JA9CJlHbVdBqfMuLlIbamY="
        assert dedup_blob_store.read(bucket, "1_628_MfemXjFVhqwZi9eYtmKc5JA9CJlHbVdBqfMuLlIbamY=") == b"toto"

    def test_the_same_content_in_another_generation_is_stored_again(self, make_blob_store, dedup_blob_store, bucket):
        """Deduplication happens within a generation only (James): the GC may be collecting the older copy."""
        later = make_blob_store(GenerationAwareBlobIdFactory(
            clock=lambda: JAMES_TEST_NOW.replace(month=9, day=20)))   # 32 days later: generation 629
        first, second = dedup_blob_store.save(bucket, b"again"), later.save(bucket, b"again")
        assert str(second) == f"1_629_{hash_id(b'again')}" and first != second
        assert sorted(later.list_blobs(bucket)) == sorted([first, second])

    def test_without_deduplication_same_content_gives_different_ids(self, passthrough_blob_store, bucket):
        store = passthrough_blob_store
        first, second = store.save(bucket, b"same bytes"), store.save(bucket, b"same bytes")
        assert not store.deduplicating
        assert first != second
        assert is_random_id(first) and is_random_id(second)
        assert store.read(bucket, first) == store.read(bucket, second) == b"same bytes"
        assert sorted(store.list_blobs(bucket)) == sorted([first, second])

    def test_same_content_in_two_buckets_is_stored_in_each(self, blob_store, bucket):
        other = BucketName(f"{bucket.value}-2")
        try:
            blob_id = blob_store.save(bucket, b"twice")
            other_id = blob_store.save(other, b"twice")
            assert (other_id == blob_id) is blob_store.deduplicating
            blob_store.delete_bucket(bucket)
            assert blob_store.read(other, other_id) == b"twice"
        finally:
            blob_store.delete_bucket(other)

    def test_concurrent_saves_into_a_new_bucket(self, blob_store, bucket):
        contents = [b"shared"] * 4 + [f"own {i}".encode() for i in range(4)]
        results: dict[int, BlobId] = {}
        errors: list[BaseException] = []

        def save(i: int) -> None:
            try:
                results[i] = blob_store.save(bucket, contents[i])
            except BaseException as exc:  # reported below, the thread must not swallow it
                errors.append(exc)

        threads = [threading.Thread(target=save, args=(i,)) for i in range(len(contents))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        shared = 1 if blob_store.deduplicating else 4
        assert len({results[i] for i in range(4)}) == shared
        for i, content in enumerate(contents):
            assert blob_store.read(bucket, results[i]) == content
        assert len(list(blob_store.list_blobs(bucket))) == shared + 4

    # ---------------------------------------------------------------- missing / exists
    def test_read_of_a_missing_blob_raises_blob_not_found(self, blob_store, bucket):
        blob_store.save(bucket, b"something")  # the bucket exists
        missing = hash_id(b"never saved")
        with pytest.raises(BlobNotFound) as raised:
            blob_store.read(bucket, missing)
        assert raised.value.bucket == bucket.value and raised.value.blob_id == missing
        with pytest.raises(BlobNotFound):
            blob_store.read_stream(bucket, missing)

    def test_read_in_a_missing_bucket_raises_blob_not_found(self, blob_store, bucket):
        with pytest.raises(BlobNotFound):
            blob_store.read(bucket, hash_id(b"x"))

    def test_exists(self, blob_store, bucket):
        blob_id = blob_store.save(bucket, b"here")
        assert blob_store.exists(bucket, blob_id)
        assert not blob_store.exists(bucket, hash_id(b"not here"))
        assert not blob_store.exists(BucketName(f"{bucket.value}-none"), blob_id)

    # ---------------------------------------------------------------- delete
    def test_delete_is_a_no_op_when_deduplicating(self, dedup_blob_store, bucket):
        blob_id = dedup_blob_store.save(bucket, b"shared by two messages")
        assert dedup_blob_store.delete(bucket, blob_id) is False
        assert dedup_blob_store.read(bucket, blob_id) == b"shared by two messages"

    def test_forced_delete_removes_the_blob(self, blob_store, bucket):
        blob_id = blob_store.save(bucket, b"to go")
        kept = blob_store.save(bucket, b"to keep")
        assert blob_store.delete(bucket, blob_id, force=True) is True
        assert not blob_store.exists(bucket, blob_id)
        with pytest.raises(BlobNotFound):
            blob_store.read(bucket, blob_id)
        assert list(blob_store.list_blobs(bucket)) == [kept]

    def test_delete_without_deduplication_removes_the_blob(self, passthrough_blob_store, bucket):
        blob_id = passthrough_blob_store.save(bucket, b"mine only")
        assert passthrough_blob_store.delete(bucket, blob_id) is True
        assert not passthrough_blob_store.exists(bucket, blob_id)

    def test_delete_of_a_missing_blob_or_bucket_is_not_an_error(self, blob_store, passthrough_blob_store, bucket):
        assert blob_store.delete(bucket, hash_id(b"nothing"), force=True) is True
        blob_store.save(bucket, b"x")
        assert passthrough_blob_store.delete(bucket, str(uuid.uuid4())) is True

    # ---------------------------------------------------------------- ids written in the other mode
    @pytest.fixture
    def written_in_every_form(self, passthrough_blob_store, dedup_blob_store, legacy_blob_store, bucket):
        """One blob per id form: random (dedup off), generation-aware (on), bare hash (this project before)."""
        ids = {"random": passthrough_blob_store.save(bucket, b"written without deduplication"),
               "generation": dedup_blob_store.save(bucket, b"written with deduplication"),
               "legacy": legacy_blob_store.save(bucket, b"written before generations")}
        assert is_random_id(ids["random"])
        assert str(ids["generation"]) == dedup_id(b"written with deduplication")
        assert str(ids["legacy"]) == hash_id(b"written before generations")
        return ids

    def test_either_mode_reads_and_lists_ids_of_every_form(self, blob_store, written_in_every_form, bucket):
        contents = {"random": b"written without deduplication", "generation": b"written with deduplication",
                    "legacy": b"written before generations"}
        for form, blob_id in written_in_every_form.items():
            assert blob_store.exists(bucket, blob_id), form
            assert blob_store.read(bucket, str(blob_id)) == contents[form], form
            with blob_store.read_stream(bucket, blob_id) as stream:
                assert stream.read() == contents[form]
        assert sorted(blob_store.list_blobs(bucket)) == sorted(written_in_every_form.values())

    def test_without_deduplication_delete_removes_its_own_ids_and_leaves_content_derived_ones(
            self, passthrough_blob_store, written_in_every_form, bucket):
        """James's PassThroughBlobStore deletes whatever id it is given, hence its warning against turning
        deduplication off once on: shared blobs go with their first deleter. Here an id made from the
        content (written under deduplication, this project's only mode before the setting) is left to
        the GC unless forced, so turning deduplication off loses no other message's content."""
        random_id = written_in_every_form.pop("random")
        assert passthrough_blob_store.delete(bucket, random_id) is True
        assert not passthrough_blob_store.exists(bucket, random_id)
        for form, blob_id in written_in_every_form.items():
            assert passthrough_blob_store.delete(bucket, blob_id) is False, form
            assert passthrough_blob_store.exists(bucket, blob_id), form
            assert passthrough_blob_store.delete(bucket, blob_id, force=True) is True, form
            assert not passthrough_blob_store.exists(bucket, blob_id), form
        assert list(passthrough_blob_store.list_blobs(bucket)) == []

    def test_with_deduplication_delete_leaves_ids_of_every_form_to_the_gc(self, dedup_blob_store,
                                                                         written_in_every_form, bucket):
        for form, blob_id in written_in_every_form.items():
            assert dedup_blob_store.delete(bucket, blob_id) is False, form
            assert dedup_blob_store.exists(bucket, blob_id), form

    def test_delete_bucket_removes_everything_and_is_idempotent(self, blob_store, bucket):
        ids = [blob_store.save(bucket, f"blob {i}".encode()) for i in range(5)]
        assert bucket in blob_store.list_buckets()
        blob_store.delete_bucket(bucket)
        assert bucket not in blob_store.list_buckets()
        assert list(blob_store.list_blobs(bucket)) == []
        for blob_id in ids:
            assert not blob_store.exists(bucket, blob_id)
        blob_store.delete_bucket(bucket)  # again: a missing bucket is fine
        assert blob_store.read(bucket, blob_store.save(bucket, b"again")) == b"again"  # recreated lazily

    # ---------------------------------------------------------------- listing
    def test_list_blobs(self, blob_store, bucket):
        ids = {blob_store.save(bucket, f"blob {i}".encode()) for i in range(12)}
        assert sorted(blob_store.list_blobs(bucket)) == sorted(ids)

    def test_list_blobs_of_a_missing_bucket_is_empty(self, blob_store, bucket):
        assert list(blob_store.list_blobs(bucket)) == []

    def test_list_buckets_has_the_created_buckets_and_the_default_one(self, blob_store, bucket):
        blob_store.save(bucket, b"x")
        buckets = blob_store.list_buckets()
        assert bucket in buckets and blob_store.default_bucket in buckets
        assert all(isinstance(b, BucketName) for b in buckets)

    def test_vault_buckets_are_per_month(self, blob_store):
        from datetime import date

        vault = BucketName.deleted_messages(date(2026, 11, 22))
        assert vault.value == "deleted-messages-2026-11-01"
        blob_store.delete_bucket(vault)  # valid for the adapter; missing is fine

    # ---------------------------------------------------------------- validation
    @pytest.mark.parametrize("name", INVALID_BUCKETS)
    def test_invalid_bucket_names_are_refused_and_nothing_is_written(self, blob_store, name):
        before = blob_store.list_buckets()
        with pytest.raises(ValueError, match="bucket"):
            blob_store.save(name, b"content")
        for call in (blob_store.read, blob_store.exists, blob_store.delete):
            with pytest.raises(ValueError, match="bucket"):
                call(name, hash_id(b"content"))
        with pytest.raises(ValueError, match="bucket"):
            blob_store.delete_bucket(name)
        with pytest.raises(ValueError, match="bucket"):
            blob_store.list_blobs(name)
        assert blob_store.list_buckets() == before

    @pytest.mark.parametrize("blob_id", INVALID_BLOB_IDS)
    def test_invalid_blob_ids_are_refused_and_nothing_is_deleted(self, blob_store, passthrough_blob_store, bucket,
                                                                 blob_id):
        kept = blob_store.save(bucket, b"kept")
        for call in (blob_store.read, blob_store.read_stream, blob_store.exists, passthrough_blob_store.delete):
            with pytest.raises(ValueError, match="blob id"):
                call(bucket, blob_id)
        with pytest.raises(ValueError, match="blob id"):
            blob_store.delete(bucket, blob_id, force=True)
        assert list(blob_store.list_blobs(bucket)) == [kept]
