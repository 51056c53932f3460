"""``mailserver rabbitmq migrate-queues [--apply]``: re-declare the queues a previous version declared otherwise.

Lists the event-bus and mail-queue work and dead-letter queues whose declaration on the broker
differs from what this configuration declares (or whose migration was interrupted); with
``--apply`` migrates them (``mailserver.rabbitmq_migration``). Settings: ``AMQP_URL``,
``RABBITMQ_MANAGEMENT_URL`` and the queue type (``MAILSERVER_QUEUE_QUORUM*``), as ``serve``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TextIO

import httpx
import pika.exceptions

from mailserver.events.naming import BusNames
from mailserver.events.queue_specs import bus_queue_specs
from mailserver.queue.queue_specs import mail_queues_specs
from mailserver.rabbitmq_management import ManagementAPIError, RabbitMQManagement
from mailserver.rabbitmq_migration import ConsumersAttached, QueueMigration
from mailserver.rabbitmq_queues import QueueSpec, QueueType
from mailserver.settings import RabbitMQSettings

COMMAND = "rabbitmq"


def add_parser(sub: argparse._SubParsersAction) -> None:
    rabbitmq = sub.add_parser(COMMAND, help="RabbitMQ maintenance")
    actions = rabbitmq.add_subparsers(dest="rabbitmq_command", required=True)
    migrate = actions.add_parser(
        "migrate-queues", help="list the queues declared otherwise than configured (dry run); --apply migrates them, "
                               "keeping their messages (stop every node first)")
    migrate.add_argument("--apply", action="store_true", help="migrate (default: only list)")


def specs(migration: QueueMigration, queue_type: QueueType, names: BusNames | None = None) -> list[QueueSpec]:
    present = migration.present()
    return bus_queue_specs(names or BusNames(), queue_type, present) + mail_queues_specs(queue_type, present)


def migrate_queues(migration: QueueMigration, queue_type: QueueType, apply: bool, *,
                   names: BusNames | None = None, out: TextIO | None = None) -> int:
    """List (and with ``apply`` migrate) the queues to migrate; the exit status."""
    def say(line: str) -> None:
        print(line, file=out or sys.stdout)

    pending = migration.pending(specs(migration, queue_type, names))
    if not pending:
        say("every event-bus and mail queue is declared as configured: nothing to migrate")
        return 0
    for p in pending:
        say(p.describe())
    if not apply:
        say(f"dry run: {len(pending)} queues to migrate, nothing changed; stop every node using this broker "
            "(mailserver and James) and run again with --apply")
        return 0
    try:
        migration.migrate(pending)
    except ConsumersAttached as exc:
        say(f"refused: {exc}")
        return 1
    say(f"{len(pending)} queues migrated")
    return 0


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for chatty in ("pika", "httpx"):   # a line per connection step and per request otherwise
        logging.getLogger(chatty).setLevel(logging.WARNING)
    settings = RabbitMQSettings.from_env()
    if not settings.amqp_url or not settings.management_url:
        print(f"mailserver {COMMAND}: AMQP_URL and RABBITMQ_MANAGEMENT_URL are both needed", file=sys.stderr)
        return 2
    try:
        with RabbitMQManagement(settings.management_url, settings.amqp_url) as management:
            return migrate_queues(QueueMigration(settings.amqp_url, management), settings.queue_type(), args.apply)
    except (ManagementAPIError, httpx.TransportError, pika.exceptions.AMQPError) as exc:
        print(f"mailserver {COMMAND}: {exc!r}. No message is lost: run the command again to finish",
              file=sys.stderr)
        return 1
