"""MAILSERVER_BLOB_*: James's blob.properties deduplication settings."""

from __future__ import annotations

import pickle
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from mailserver.blob.api import BlobId, GenerationAwareBlobIdFactory, GenerationConfig, RandomBlobIdFactory
from mailserver.blob.config import BlobStoreConfig
from mailserver.model.james_units import parse_duration
from mailserver.runtime.settings import ServeSettings, SettingsError


def test_off_by_default_as_james_sample_blob_properties():
    config = BlobStoreConfig.from_env({})
    assert config == BlobStoreConfig(False, GenerationConfig(1, timedelta(days=30)))
    assert isinstance(config.id_factory(), RandomBlobIdFactory)
    assert ServeSettings.from_env({}).blob == config


def test_on_gives_generation_aware_ids_of_the_configured_family_and_duration():
    config = BlobStoreConfig.from_env({"MAILSERVER_BLOB_DEDUPLICATION": "true",
                                       "MAILSERVER_BLOB_GENERATION_FAMILY": "3",
                                       "MAILSERVER_BLOB_GENERATION_DURATION": "15"})
    assert config.generation == GenerationConfig(3, timedelta(days=15))
    factory = config.id_factory(clock=lambda: datetime(2021, 8, 19, 10, 15, 30, tzinfo=UTC))
    assert isinstance(factory, GenerationAwareBlobIdFactory)
    assert str(factory.generate(b"\0" * 32)).startswith("3_1257_")
    assert ServeSettings.from_env({"MAILSERVER_BLOB_DEDUPLICATION": "on"}).blob.deduplication


@pytest.mark.parametrize("text, expected", [("30", timedelta(days=30)), ("15day", timedelta(days=15)),
                                            ("2 days", timedelta(days=2)), ("12h", timedelta(hours=12)),
                                            ("90 minutes", timedelta(minutes=90)), ("45s", timedelta(seconds=45))])
def test_durations_default_to_days_as_james(text, expected):
    assert BlobStoreConfig.from_env({"MAILSERVER_BLOB_GENERATION_DURATION": text}).generation.duration == expected
    assert parse_duration(text, "days") == expected


@pytest.mark.parametrize("env, variable", [
    ({"MAILSERVER_BLOB_DEDUPLICATION": "maybe"}, "MAILSERVER_BLOB_DEDUPLICATION"),
    ({"MAILSERVER_BLOB_GENERATION_FAMILY": "0"}, "MAILSERVER_BLOB_GENERATION_FAMILY"),
    ({"MAILSERVER_BLOB_GENERATION_FAMILY": "one"}, "MAILSERVER_BLOB_GENERATION_FAMILY"),
    ({"MAILSERVER_BLOB_GENERATION_DURATION": "0"}, "MAILSERVER_BLOB_GENERATION_DURATION"),
    ({"MAILSERVER_BLOB_GENERATION_DURATION": "a month"}, "MAILSERVER_BLOB_GENERATION_DURATION"),
])
def test_malformed_settings_stop_the_server_naming_the_variable(env, variable):
    with pytest.raises(SettingsError, match=variable):
        ServeSettings.from_env(env)


def test_the_config_pickles_and_hashes_for_spark_executors():
    config = BlobStoreConfig(True, GenerationConfig(2, timedelta(days=7)))
    assert pickle.loads(pickle.dumps(config)) == config  # noqa: S301 - our own object
    assert hash(config) == hash(BlobStoreConfig.from_env({"MAILSERVER_BLOB_DEDUPLICATION": "1",
                                                          "MAILSERVER_BLOB_GENERATION_FAMILY": "2",
                                                          "MAILSERVER_BLOB_GENERATION_DURATION": "7d"}))


def test_random_ids_of_the_default_setting_are_uuid4():
    blob_id = BlobStoreConfig().id_factory().generate(b"\0" * 32)
    assert isinstance(blob_id, BlobId) and uuid.UUID(str(blob_id)).version == 4


def test_the_blob_cache_is_on_by_default_and_sized_from_the_environment():
    assert BlobStoreConfig.from_env({}).cache_bytes == 32 * 1024 * 1024
    config = BlobStoreConfig.from_env({"MAILSERVER_BLOB_CACHE_BYTES": "0",
                                       "MAILSERVER_BLOB_CACHE_MAX_BLOB_BYTES": "4096"})
    assert (config.cache_bytes, config.cache_max_blob_bytes) == (0, 4096)
    with pytest.raises(ValueError, match="MAILSERVER_BLOB_CACHE_BYTES"):
        BlobStoreConfig.from_env({"MAILSERVER_BLOB_CACHE_BYTES": "-1"})
