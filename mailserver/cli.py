"""Command line entry point: ``mailserver serve|version``.

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
    args = parser.parse_args(argv)
    if args.command == "version":
        print(__version__)
        return 0
    if args.command == "schema":
        return schema_cli.run(args)
    print("mailserver serve: the server roles are not implemented yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
