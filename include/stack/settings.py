"""Where the stack lives, which ports it uses and how much memory each service may take.

Every value can be overridden by an environment variable so that a second stack (another
checkout, a CI job) can run beside the first one on other ports.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:  # a typo in a port must not start a half-configured stack
        raise SystemExit(f"{name} must be an integer, got {raw!r}") from exc


def _env_str(name: str, default: str) -> str:
    return os.environ.get(name) or default


@dataclass(frozen=True)
class Ports:
    cassandra: int = field(default_factory=lambda: _env_int("STACK_CASSANDRA_PORT", 9042))
    cassandra_storage: int = field(default_factory=lambda: _env_int("STACK_CASSANDRA_STORAGE_PORT", 7000))
    cassandra_jmx: int = field(default_factory=lambda: _env_int("STACK_CASSANDRA_JMX_PORT", 7199))
    # The three-node cluster shares the CQL and storage ports (each node has its own address) but
    # JMX listens on 127.0.0.1 whatever the node's address: node N takes this port + N - 1.
    cassandra_cluster_jmx: int = field(default_factory=lambda: _env_int("STACK_CASSANDRA_CLUSTER_JMX_PORT", 7299))
    opensearch: int = field(default_factory=lambda: _env_int("STACK_OPENSEARCH_PORT", 9200))
    s3: int = field(default_factory=lambda: _env_int("STACK_S3_PORT", 9000))
    amqp: int = field(default_factory=lambda: _env_int("STACK_AMQP_PORT", 5672))
    rabbitmq_management: int = field(default_factory=lambda: _env_int("STACK_RABBITMQ_MANAGEMENT_PORT", 15672))
    rabbitmq_dist: int = field(default_factory=lambda: _env_int("STACK_RABBITMQ_DIST_PORT", 25672))
    epmd: int = field(default_factory=lambda: _env_int("STACK_EPMD_PORT", 4369))
    postgres: int = field(default_factory=lambda: _env_int("STACK_POSTGRES_PORT", 5432))
    airflow: int = field(default_factory=lambda: _env_int("STACK_AIRFLOW_PORT", 8080))
    smtp: int = field(default_factory=lambda: _env_int("STACK_SMTP_PORT", 2525))
    webadmin: int = field(default_factory=lambda: _env_int("STACK_WEBADMIN_PORT", 8000))
    imap: int = field(default_factory=lambda: _env_int("STACK_IMAP_PORT", 1143))
    jmap: int = field(default_factory=lambda: _env_int("STACK_JMAP_PORT", 8001))
    spark_master: int = field(default_factory=lambda: _env_int("STACK_SPARK_MASTER_PORT", 7077))
    spark_master_ui: int = field(default_factory=lambda: _env_int("STACK_SPARK_MASTER_UI_PORT", 18080))


@dataclass(frozen=True)
class Heaps:
    """JVM heaps, capped so the stack + Airflow + one Spark job stay under 8 GiB."""

    cassandra: str = field(default_factory=lambda: _env_str("STACK_CASSANDRA_HEAP", "1g"))
    cassandra_cluster_node: str = field(default_factory=lambda: _env_str("STACK_CASSANDRA_CLUSTER_HEAP", "512m"))
    opensearch: str = field(default_factory=lambda: _env_str("STACK_OPENSEARCH_HEAP", "768m"))
    s3proxy: str = field(default_factory=lambda: _env_str("STACK_S3PROXY_HEAP", "256m"))
    rabbitmq_watermark: str = field(default_factory=lambda: _env_str("STACK_RABBITMQ_WATERMARK", "512MiB"))
    spark_daemon: str = field(default_factory=lambda: _env_str("STACK_SPARK_DAEMON_HEAP", "256m"))
    spark_worker_memory: str = field(default_factory=lambda: _env_str("STACK_SPARK_WORKER_MEMORY", "1g"))


@dataclass(frozen=True)
class Credentials:
    """Local-only credentials. Never reuse them outside a developer machine."""

    s3_access_key: str = field(default_factory=lambda: _env_str("STACK_S3_ACCESS_KEY", "mailserver"))
    s3_secret_key: str = field(default_factory=lambda: _env_str("STACK_S3_SECRET_KEY", "mailserver-secret"))
    amqp_user: str = field(default_factory=lambda: _env_str("STACK_AMQP_USER", "mailserver"))
    amqp_password: str = field(default_factory=lambda: _env_str("STACK_AMQP_PASSWORD", "mailserver"))
    postgres_user: str = "airflow"
    postgres_password: str = field(default_factory=lambda: _env_str("STACK_POSTGRES_PASSWORD", "airflow"))
    postgres_db: str = "airflow"
    airflow_user: str = "admin"


@dataclass(frozen=True)
class StackSettings:
    root: Path = field(default_factory=lambda: Path(_env_str("STACK_HOME", str(REPO_ROOT / ".stack"))).resolve())
    host: str = "127.0.0.1"
    ports: Ports = field(default_factory=Ports)
    heaps: Heaps = field(default_factory=Heaps)
    credentials: Credentials = field(default_factory=Credentials)
    java_home: str = field(default_factory=lambda: _env_str("JAVA_HOME", _default_java_home()))

    def service_dir(self, name: str) -> Path:
        return self.root / name

    @property
    def jars_dir(self) -> Path:
        # Shareable between stacks (a second stack for tests need not download again).
        return Path(os.environ.get("STACK_LIB_HOME") or self.root / "lib").resolve()

    @property
    def java(self) -> str:
        return str(Path(self.java_home) / "bin" / "java")


def _default_java_home() -> str:
    for candidate in ("/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/java-17-openjdk-arm64"):
        if Path(candidate, "bin", "java").exists():
            return candidate
    return "/usr"
