"""Command line entry point: ``mailserver serve|webadmin|version``.

The server roles (smtp, spooler, outgoing, listeners, webadmin) arrive with the mail-flow and
WebAdmin work; until then ``serve`` says so plainly instead of pretending to run.
"""

from __future__ import annotations

import argparse
import sys

from mailserver import __version__
from mailserver.cassandra import cli as schema_cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mailserver")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("version", help="print the version")
    sub.add_parser("serve", help="run the server roles (not implemented yet)")
    schema_cli.add_parser(sub)
    sub.add_parser("webadmin", help="run the WebAdmin HTTP API (configuration from the environment)")
    args = parser.parse_args(argv)
    if args.command == "version":
        print(__version__)
        return 0
    if args.command == "schema":
        return schema_cli.run(args)
    if args.command == "webadmin":
        return _webadmin()
    print("mailserver serve: the server roles are not implemented yet", file=sys.stderr)
    return 2


def _webadmin() -> int:
    # Imported here: the admin API stack (fastapi, uvicorn) is only needed by this role.
    from mailserver.webadmin.auth import AuthConfigError
    from mailserver.webadmin.server import serve

    try:
        serve()
    except AuthConfigError as exc:
        print(f"mailserver webadmin: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
