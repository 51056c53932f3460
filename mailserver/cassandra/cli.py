"""``mailserver schema init|status|upgrade``: create the keyspace, show and upgrade the version."""

from __future__ import annotations

import argparse
import logging

from mailserver.cassandra.config import CassandraConfig
from mailserver.cassandra.migrations.runner import MigrationError, MigrationPartial, migrate
from mailserver.cassandra.session import CassandraSession
from mailserver.cassandra.versions import (
    LATEST,
    MAX_VERSION,
    MIN_VERSION,
    SchemaVersionDAO,
    SchemaVersionError,
    compute_state,
    initialize_schema,
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    schema = sub.add_parser("schema", help="Cassandra keyspace, tables and schema version")
    actions = schema.add_subparsers(dest="schema_command", required=True)
    actions.add_parser("init", help="create the keyspace and missing tables (idempotent); check the version")
    actions.add_parser("status", help="print the current and supported schema versions")
    upgrade = actions.add_parser("upgrade", help="run the migrations up to --to (default: latest)")
    upgrade.add_argument("--to", type=int, default=LATEST, help=f"target version ({MIN_VERSION}..{MAX_VERSION})")


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    config = CassandraConfig.from_env()
    try:
        if args.schema_command == "init":
            state = initialize_schema(config)
            print(f"keyspace {config.keyspace}: {state.name}")
            return 0
        with CassandraSession.connect(config) as session:
            if args.schema_command == "status":
                version = SchemaVersionDAO(session).current_version()
                status = compute_state(version if version is not None else MIN_VERSION).name
                print(f"keyspace {config.keyspace}: version {version}, supported {MIN_VERSION}..{MAX_VERSION}, "
                      f"latest {LATEST}: {status}")
                return 0
            migrate(session, target=args.to)
            print(f"keyspace {config.keyspace}: at version {SchemaVersionDAO(session).current_version()}")
            return 0
    except (SchemaVersionError, MigrationError, MigrationPartial) as exc:
        print(f"error: {exc}")
        return 1
