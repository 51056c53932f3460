"""Spark jobs build their blob stores with the server's MAILSERVER_BLOB_* settings (ids and deletes)."""

from __future__ import annotations

import pickle

from mailserver.blob.api import GenerationAwareBlobIdFactory, RandomBlobIdFactory
from mailserver.blob.config import BlobStoreConfig
from spark_apps.common.mail_queues import QueueAccess
from spark_apps.common.settings import JobSettings
from spark_apps.common.vault_restore import RestoreAccess

SETTINGS = JobSettings(None, "127.0.0.1", 9042, "ks", "http://127.0.0.1:1", None)
ENV = {"AMQP_URL": "amqp://u:p@127.0.0.1:1/%2F", "S3_ENDPOINT": "http://127.0.0.1:1", "S3_ACCESS_KEY": "k",
       "S3_SECRET_KEY": "s"}


def test_queue_jobs_use_the_server_blob_mode():
    default = QueueAccess.from_env(SETTINGS, ENV)
    assert default.blob == BlobStoreConfig()
    assert isinstance(default.blob_store().blob_id_factory, RandomBlobIdFactory)   # built lazily, no I/O
    on = QueueAccess.from_env(SETTINGS, {**ENV, "MAILSERVER_BLOB_DEDUPLICATION": "true",
                                         "MAILSERVER_BLOB_GENERATION_FAMILY": "2"})
    assert on != default and pickle.loads(pickle.dumps(on)) == on   # noqa: S301 - our own object
    factory = on.blob_store().blob_id_factory
    assert isinstance(factory, GenerationAwareBlobIdFactory) and factory.config.family == 2


def test_the_restore_job_carries_the_blob_settings_to_its_executors():
    access = RestoreAccess.of("127.0.0.1", 9042, "ks", {**ENV, "MAILSERVER_BLOB_DEDUPLICATION": "true"}, None)
    assert ("MAILSERVER_BLOB_DEDUPLICATION", "true") in access.s3
    assert BlobStoreConfig.from_env(dict(access.s3)).deduplication
