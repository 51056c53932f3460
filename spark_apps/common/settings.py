"""Connection settings of a Spark job, from command-line arguments or the environment.

Arguments win over the environment so a job can be pointed elsewhere for one run; the
environment names are the platform's (see ``include/stack/endpoints.py``), so the same job
runs unchanged from a shell, from pytest or from Airflow's SparkSubmitOperator.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mailserver.cassandra.config import DEFAULT_KEYSPACE


@dataclass(frozen=True)
class JobSettings:
    master: str | None
    cassandra_hosts: str
    cassandra_port: int
    keyspace: str
    s3_endpoint: str | None
    opensearch_url: str | None

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("connections (default: environment)")
        g.add_argument("--master", help="Spark master; default: what spark-submit was given, else local[*]")
        g.add_argument("--cassandra-hosts", help="comma-separated contact points [CASSANDRA_HOSTS]")
        g.add_argument("--cassandra-port", type=int, help="CQL port [CASSANDRA_PORT]")
        g.add_argument("--keyspace", help=f"keyspace [CASSANDRA_KEYSPACE, default {DEFAULT_KEYSPACE}]")
        g.add_argument("--s3-endpoint", help="S3 endpoint URL [S3_ENDPOINT]")
        g.add_argument("--opensearch-url", help="OpenSearch URL [OPENSEARCH_URL]")

    @classmethod
    def from_args(cls, args: argparse.Namespace, env: Mapping[str, str] | None = None) -> JobSettings:
        env = os.environ if env is None else env
        return cls(
            master=args.master or env.get("SPARK_MASTER"),
            cassandra_hosts=args.cassandra_hosts or env.get("CASSANDRA_HOSTS", "127.0.0.1"),
            cassandra_port=int(args.cassandra_port or env.get("CASSANDRA_PORT", "9042")),
            keyspace=args.keyspace or env.get("CASSANDRA_KEYSPACE", DEFAULT_KEYSPACE),
            s3_endpoint=args.s3_endpoint or env.get("S3_ENDPOINT"),
            opensearch_url=args.opensearch_url or env.get("OPENSEARCH_URL"),
        )


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> tuple[argparse.Namespace, JobSettings]:
    JobSettings.add_arguments(parser)
    args = parser.parse_args(argv)
    return args, JobSettings.from_args(args)
