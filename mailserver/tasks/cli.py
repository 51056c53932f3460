"""``mailserver tasks copy-to-event-store``: copy the tasks recorded before nodes wrote James's task events.

Earlier versions kept tasks only in ``taskExecutions``; James nodes (and ``/tasks`` now) read
``eventStore`` and ``taskExecutionDetailsProjection``. This copies each ``taskExecutions`` row
that has no report there yet, as the events its dates and nodes show; a task already there is
left alone, so the command may be run again (and while nodes run). Settings: Cassandra's, as ``serve``.
"""

from __future__ import annotations

import argparse
import logging

from mailserver.cassandra.config import CassandraConfig
from mailserver.cassandra.session import CassandraSession

COMMAND = "tasks"


def add_parser(sub: argparse._SubParsersAction) -> None:
    tasks = sub.add_parser(COMMAND, help="task store maintenance")
    actions = tasks.add_subparsers(dest="tasks_command", required=True)
    actions.add_parser("copy-to-event-store", help="copy taskExecutions rows into James's eventStore and "
                                                   "taskExecutionDetailsProjection (idempotent)")


def run(args: argparse.Namespace) -> int:
    # Imported here: the other commands need no task module.
    from mailserver.tasks.eventsourced import adopt_all
    from mailserver.tasks.wiring import cassandra_task_store

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    with CassandraSession.connect(CassandraConfig.from_env()) as session:
        copied, present = adopt_all(cassandra_task_store(session))
    print(f"{copied} tasks copied to the event store, {present} already there")
    return 0
