"""What a benchmark run stores in: a keyspace with the whole James schema and an S3 bucket of its own on the
local stack (or the endpoints in the environment), both removed at the end; and where its figures go."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from include.stack.endpoints import Endpoints
from include.stack.settings import StackSettings
from mailserver.blob.s3 import S3BlobStore, S3Config
from mailserver.cassandra.config import CassandraConfig
from mailserver.cassandra.session import CassandraSession
from tests.support.keyspaces import scratch_keyspace

BENCHMARKS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def stack_endpoints() -> Endpoints:
    return Endpoints.from_env() or Endpoints.from_settings(StackSettings())


@contextmanager
def scratch_backends(ep: Endpoints) -> Iterator[tuple[CassandraSession, S3BlobStore]]:
    config = CassandraConfig(hosts=tuple(ep.cassandra_hosts.split(",")), port=ep.cassandra_port,
                             keyspace=f"bench_{uuid.uuid4().hex[:8]}")
    blobs = S3BlobStore(S3Config(endpoint_url=ep.s3_endpoint, access_key=ep.s3_access_key,
                                 secret_key=ep.s3_secret_key, region=ep.s3_region,
                                 default_bucket=f"bench-{uuid.uuid4().hex[:8]}"))
    try:
        with scratch_keyspace(config) as session:
            yield session, blobs
    finally:
        blobs.delete_bucket(blobs.default_bucket)


def publish(lines: Sequence[str], *, record: bool) -> None:
    """Prints a section of figures; with ``record`` also appends it to docs/benchmarks.md (started with its
    title when missing)."""
    print("\n".join(lines))
    if not record:
        return
    if not BENCHMARKS.exists():
        BENCHMARKS.write_text("# Benchmarks\n\nFigures measured by the scripts in `bench/`; newest last.\n\n")
    with BENCHMARKS.open("a") as out:
        out.write("\n".join(lines) + "\n")
