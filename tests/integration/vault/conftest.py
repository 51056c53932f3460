"""The vault on the session keyspace and the real S3 server, with vault buckets of this session only."""

from __future__ import annotations

import pytest

from mailserver.blob.s3 import S3BlobStore, S3Config


@pytest.fixture(scope="session")
def vault_s3(stack, unique):
    """An S3 store whose vault buckets are prefixed for this session (``deleted-messages-*`` names are global)."""
    store = S3BlobStore(S3Config(endpoint_url=stack.s3_endpoint, access_key=stack.s3_access_key,
                                 secret_key=stack.s3_secret_key, region=stack.s3_region,
                                 bucket_prefix=f"t{unique}-", default_bucket=f"vault-{unique}"))
    yield store
    for bucket in store.list_buckets():
        store.delete_bucket(bucket)
