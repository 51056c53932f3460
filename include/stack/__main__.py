"""CLI of the local stack manager: ``python -m include.stack up|down|status|logs|env|fetch``."""

from __future__ import annotations

import argparse
import sys

from . import artifacts
from .manager import PROFILES, SERVICE_CLASSES, StackManager, format_status
from .services.airflow import Airflow
from .services.base import ServiceError
from .services.cassandra_cluster import CassandraCluster
from .services.mailserver import MailServer


def _names(args: argparse.Namespace) -> list[str]:
    if args.services:
        return [n for part in args.services for n in part.split(",") if n]
    if args.command == "down":
        return list(SERVICE_CLASSES)   # whatever was started, services asked for by name included
    return list(PROFILES[args.profile])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m include.stack", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for cmd, help_ in [("up", "start (idempotent) and wait until every service answers"),
                       ("down", "stop the processes this stack started, by pid"),
                       ("status", "health, pid and resident memory of each service"),
                       ("logs", "print the tail of each service's logs"),
                       ("env", "print the environment (endpoints, AIRFLOW_CONN_*) as exports"),
                       ("fetch", "download the JVM artifacts only")]:
        p = sub.add_parser(cmd, help=help_)
        p.add_argument("services", nargs="*", help=f"subset of {', '.join(SERVICE_CLASSES)}")
        p.add_argument("--profile", choices=sorted(PROFILES), default="all")
        if cmd == "logs":
            p.add_argument("-n", "--lines", type=int, default=40)
    args = parser.parse_args(argv)
    manager = StackManager()
    try:
        if args.command == "up":
            manager.up(_names(args))
            print(urls(manager))
        elif args.command == "down":
            manager.down(_names(args))
        elif args.command == "status":
            rows = manager.status(_names(args))
            print(format_status(rows))
            return 0 if all(r.healthy for r in rows) else 3
        elif args.command == "logs":
            for svc in manager.select(_names(args)):
                print(svc.tail_logs(args.lines) or f"--- {svc.name}: no logs yet ---")
        elif args.command == "env":
            for k, v in sorted(manager.env_exports().items()):
                print(f"export {k}='{v}'")
        elif args.command == "fetch":
            artifacts.fetch_all(manager.settings)
    except (ServiceError, artifacts.FetchError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def urls(manager: StackManager) -> str:
    s, c = manager.settings, manager.settings.credentials
    airflow = manager.services["airflow"]
    assert isinstance(airflow, Airflow)
    lines = [
        "",
        "Services (all on loopback):",
        f"  Cassandra CQL        {s.host}:{s.ports.cassandra}",
        f"  OpenSearch           http://{s.host}:{s.ports.opensearch}",
        f"  S3 (S3Proxy)         http://{s.host}:{s.ports.s3}"
        f"   access key {c.s3_access_key} / secret {c.s3_secret_key}",
        f"  RabbitMQ AMQP        amqp://{s.host}:{s.ports.amqp}   user {c.amqp_user} / {c.amqp_password}",
        f"  RabbitMQ management  http://{s.host}:{s.ports.rabbitmq_management}"
        f"   user {c.amqp_user} / {c.amqp_password}",
    ]
    cluster = manager.services["cassandra-cluster"]
    assert isinstance(cluster, CassandraCluster)
    if cluster.pids():
        lines.append(f"  Cassandra cluster    {cluster.hosts} port {s.ports.cassandra}   (RF=3 keyspaces: "
                     "CASSANDRA_HOSTS and CASSANDRA_REPLICATION=NetworkTopologyStrategy:datacenter1=3)")
    mail = manager.services["mailserver"]
    assert isinstance(mail, MailServer)
    if mail.pids():
        lines += [
            f"  Mail server SMTP     smtp://{s.host}:{s.ports.smtp}   STARTTLS certificate {mail.certificate().cert}",
            f"  Mail server IMAP     imap://{s.host}:{s.ports.imap}   STARTTLS, then log in as a user",
            f"  Mail server WebAdmin {mail.webadmin_url}   header Password: {mail.webadmin_password()}",
            f"  Mail server JMAP     {mail.jmap_url}   same certificate, HTTP Basic as a user",
        ]
    if airflow.pids():
        password = airflow.admin_password() or f"(see {airflow.passwords_file})"
        lines += [
            f"  PostgreSQL           {s.host}:{s.ports.postgres}"
            f"   db {c.postgres_db}, user {c.postgres_user} / {c.postgres_password}",
            f"  Airflow UI/API       http://{s.host}:{s.ports.airflow}   user {c.airflow_user} / {password}",
        ]
    lines += [
        f"Data and logs under {s.root}; `source {s.root / 'env.sh'}` to use the airflow CLI.",
        "Stop everything with: make stop",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
