"""Command line entry point: ``mailserver serve|webadmin|schema|rabbitmq|version``.

``serve`` runs the server roles (smtp, spooler, outgoing, webadmin, tasks, listeners, imap), all
by default, or the ones named with ``--roles`` (which may also name ``jmap``); ``webadmin`` is
``serve --roles webadmin,tasks``. Settings come from the environment (see ``mailserver.runtime.settings``).
``rabbitmq migrate-queues`` re-declares queues a previous version declared otherwise (docs/operations.md).
``tasks copy-to-event-store`` copies tasks recorded by earlier versions into James's task tables.
"""

from __future__ import annotations

import argparse
import sys

from mailserver import __version__
from mailserver.cassandra import cli as schema_cli
from mailserver.runtime import queue_migration_cli
from mailserver.tasks import cli as tasks_cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mailserver")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("version", help="print the version")
    serve = sub.add_parser("serve", help="run the server roles (configuration from the environment)")
    serve.add_argument("--roles", help="comma list of smtp, spooler, outgoing, webadmin, tasks, listeners, imap, "
                                       "jmap (default: MAILSERVER_ROLES, else all but jmap)")
    schema_cli.add_parser(sub)
    queue_migration_cli.add_parser(sub)
    tasks_cli.add_parser(sub)
    sub.add_parser("webadmin", help="run the WebAdmin HTTP API (configuration from the environment)")
    args = parser.parse_args(argv)
    if args.command == "version":
        print(__version__)
        return 0
    if args.command == "schema":
        return schema_cli.run(args)
    if args.command == queue_migration_cli.COMMAND:
        return queue_migration_cli.run(args)
    if args.command == tasks_cli.COMMAND:
        return tasks_cli.run(args)
    if args.command == "webadmin":
        return _serve("webadmin", "webadmin,tasks")
    return _serve("serve", args.roles)


def _serve(command: str, roles: str | None) -> int:
    # Imported here: `mailserver version` and `schema` need none of the server's drivers.
    from mailserver.cassandra.versions import SchemaVersionError
    from mailserver.mailets.api import ConfigError
    from mailserver.observability.logging import configure
    from mailserver.runtime.serve import run
    from mailserver.runtime.settings import ServeSettings
    from mailserver.settings import LoggingSettings
    from mailserver.webadmin.auth import AuthConfigError

    try:
        logs = LoggingSettings.from_env()
        configure(fmt=logs.log_format, levels=logs.log_levels, background=True)
        settings = ServeSettings.from_env(roles=roles)
        run(settings)
    except (ConfigError, AuthConfigError, SchemaVersionError, ValueError) as exc:
        print(f"mailserver {command}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
