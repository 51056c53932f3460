"""The vault on the session keyspace and the real S3 server, with vault buckets of this session only."""

from __future__ import annotations

import pytest

from tests.support.vault_seed import prefixed_vault_store


@pytest.fixture(scope="session")
def vault_s3(stack, unique):
    """An S3 store whose vault buckets are prefixed for this session (``deleted-messages-*`` names are global)."""
    with prefixed_vault_store(stack, f"t{unique}-", f"vault-{unique}") as store:
        yield store
