"""The blob store's deduplication (James's blob.properties) and the in-process cache of small blobs."""

from __future__ import annotations

from datetime import timedelta

from .base import EnvironmentSettings, setting
from .values import Bytes, Days, Flag, Positive


class BlobSettings(EnvironmentSettings):
    deduplication: Flag = setting("MAILSERVER_BLOB_DEDUPLICATION", False, "James's deduplication.enable (unsafe "
                                  "to turn off once on).", "boolean")
    generation_family: Positive = setting("MAILSERVER_BLOB_GENERATION_FAMILY", 1, "James's "
                                          "deduplication.gc.generation.family.", "integer")
    generation_duration: Days = setting("MAILSERVER_BLOB_GENERATION_DURATION", timedelta(days=30), "James's "
                                        "deduplication.gc.generation.duration.", "duration (bare number: days)")
    cache_bytes: Bytes = setting("MAILSERVER_BLOB_CACHE_BYTES", 32 * 1024 * 1024, "In-process cache of small "
                                 "blobs (0: none).", "size (bare number: bytes)")
    cache_max_blob_bytes: Bytes = setting("MAILSERVER_BLOB_CACHE_MAX_BLOB_BYTES", 256 * 1024, "Largest blob that "
                                          "cache holds.", "size (bare number: bytes)")
