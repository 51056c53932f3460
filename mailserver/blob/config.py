"""The blob store's settings, after James's ``blob.properties`` (deduplication part).

``MAILSERVER_BLOB_DEDUPLICATION`` is James's ``deduplication.enable``: off by default, as in
James's sample configuration (James itself refuses to start without the property). Turning it
off after it was on is unsafe in James for the same reason as here: blobs written while on may be
shared, and real deletes would remove them for every holder.

``MAILSERVER_BLOB_GENERATION_FAMILY`` and ``MAILSERVER_BLOB_GENERATION_DURATION`` are James's
``deduplication.gc.generation.family`` (1) and ``.duration`` (30 days; James's durations, a bare
number is days: ``30``, ``4w``, ``1 month``); they only shape the ids of the deduplicating store.

``MAILSERVER_BLOB_CACHE_BYTES`` (32 MiB; 0 turns it off) and ``MAILSERVER_BLOB_CACHE_MAX_BLOB_BYTES``
(256 KiB) size the mail server's in-process cache of small blobs (``cache.py``), ours, not James's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from mailserver.settings import BlobSettings, SettingsError

from .api import BlobIdFactory, GenerationConfig, blob_id_factory
from .cache import DEFAULT_MAX_BLOB_BYTES, DEFAULT_MAX_BYTES

DEDUPLICATION = "MAILSERVER_BLOB_DEDUPLICATION"
GENERATION_FAMILY = "MAILSERVER_BLOB_GENERATION_FAMILY"
GENERATION_DURATION = "MAILSERVER_BLOB_GENERATION_DURATION"
CACHE_BYTES = "MAILSERVER_BLOB_CACHE_BYTES"
CACHE_MAX_BLOB_BYTES = "MAILSERVER_BLOB_CACHE_MAX_BLOB_BYTES"
VARIABLES = (DEDUPLICATION, GENERATION_FAMILY, GENERATION_DURATION, CACHE_BYTES, CACHE_MAX_BLOB_BYTES)


@dataclass(frozen=True)
class BlobStoreConfig:
    """Hashable and picklable: Spark jobs carry it to their executors."""

    deduplication: bool = False
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    cache_bytes: int = DEFAULT_MAX_BYTES
    cache_max_blob_bytes: int = DEFAULT_MAX_BLOB_BYTES

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BlobStoreConfig:
        """From ``MAILSERVER_BLOB_*`` (``mailserver.settings.blob``); SettingsError naming the variable."""
        settings = BlobSettings.from_env(env)
        try:
            generation = GenerationConfig(settings.generation_family, settings.generation_duration)
        except ValueError as exc:
            raise SettingsError(f"{GENERATION_FAMILY}/{GENERATION_DURATION}: {exc}") from None
        return cls(settings.deduplication, generation, settings.cache_bytes, settings.cache_max_blob_bytes)

    def id_factory(self, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> BlobIdFactory:
        return blob_id_factory(self.deduplication, self.generation, clock)
