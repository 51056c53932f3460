"""A second node for the two-process tests: only a TaskWorker on the test keyspace.

Runs ``CountingTask`` under the type given on the command line, prints ``ready`` once polling,
and stops cleanly on SIGTERM (the tests SIGKILL it to simulate a crash).
"""

from __future__ import annotations

import argparse
import signal
import threading

from mailserver.cassandra.config import CassandraConfig
from mailserver.cassandra.session import CassandraSession
from mailserver.tasks.cassandra import CassandraTaskStore
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.worker import TaskWorker
from tests.contract.task_manager_contract import counting_factory


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--keyspace", required=True)
    parser.add_argument("--node", required=True)
    parser.add_argument("--type", required=True)
    parser.add_argument("--heartbeat-interval", type=float, default=0.2)
    parser.add_argument("--heartbeat-timeout", type=float, default=60.0)
    args = parser.parse_args()
    config = CassandraConfig(hosts=tuple(args.hosts.split(",")), port=args.port, keyspace=args.keyspace)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with CassandraSession.connect(config) as session:
        registry = TaskRegistry()
        registry.register(args.type, counting_factory(args.type))
        worker = TaskWorker(CassandraTaskStore(session), registry, args.node, poll_interval=0.1,
                            heartbeat_interval=args.heartbeat_interval, heartbeat_timeout=args.heartbeat_timeout)
        with worker:
            print("ready", flush=True)
            stop.wait()


if __name__ == "__main__":
    main()
