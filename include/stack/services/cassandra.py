"""Apache Cassandra 5.0 from the Maven Central jars, launched straight on the JVM (Java 17)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .. import artifacts, processes
from .base import Service

CONF = Path(__file__).resolve().parents[1] / "conf" / "cassandra"


class Cassandra(Service):
    name = "cassandra"
    start_timeout = 240.0

    @property
    def lib(self) -> Path:
        return artifacts.lib_dir(self.settings, "cassandra")

    @property
    def conf_dir(self) -> Path:
        return self.home / "conf"

    def log_files(self) -> list[Path]:
        return [self.log_file, self.home / "logs" / "system.log"]

    # What a node of a cluster changes: where it listens, its seeds, its JMX port, its heap, its JVM.
    @property
    def address(self) -> str:
        return self.settings.host

    @property
    def jmx_port(self) -> int:
        return self.settings.ports.cassandra_jmx

    @property
    def heap(self) -> str:
        return self.settings.heaps.cassandra

    @property
    def initial_heap(self) -> str:
        return self.heap

    def seeds(self) -> str:
        return f"{self.address}:{self.settings.ports.cassandra_storage}"

    def jvm_options(self) -> list[str]:
        return ["-XX:+UseG1GC", "-XX:MaxDirectMemorySize=512m"]

    @property
    def ring_delay_ms(self) -> int:
        """How long a starting node waits to hear from a seed (and a seed from anyone) before it goes on."""
        return 1000

    def prepare(self) -> None:
        artifacts.fetch(self.settings, "cassandra")
        for sub in ("data", "logs", "tmp", "conf"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "cassandra.yaml").write_text(yaml.safe_dump(self.config(), sort_keys=False))

    def config(self) -> dict[str, Any]:
        p = self.settings.ports
        return {
            "cluster_name": "mailserver-local",
            "num_tokens": 16,
            "allocate_tokens_for_local_replication_factor": 1,
            "partitioner": "org.apache.cassandra.dht.Murmur3Partitioner",
            "endpoint_snitch": "SimpleSnitch",
            "seed_provider": [{
                "class_name": "org.apache.cassandra.locator.SimpleSeedProvider",
                "parameters": [{"seeds": self.seeds()}],
            }],
            "listen_address": self.address,
            "rpc_address": self.address,
            "storage_port": p.cassandra_storage,
            "native_transport_port": p.cassandra,
            "start_native_transport": True,
            "commitlog_sync": "periodic",
            "commitlog_sync_period": "10000ms",
            "authenticator": "AllowAllAuthenticator",
            "authorizer": "AllowAllAuthorizer",
            # James relies on lightweight transactions (uid/modseq allocation, tasks).
            "cas_contention_timeout": "3000ms",
            "auto_snapshot": False,
            "concurrent_reads": 8,
            "concurrent_writes": 8,
            "concurrent_counter_writes": 8,
            "concurrent_compactors": 1,
            "key_cache_size": "16MiB",
            "file_cache_size": "64MiB",
            # Tests drop and recreate tables often; keep DDL snappy on a single node.
            "materialized_views_enabled": False,
        }

    def start(self) -> None:
        processes.spawn(self.command(), pid_file=self.pid_file, log_file=self.log_file, cwd=self.home)

    def command(self) -> list[str]:
        s, h = self.settings, self.home
        jamm = sorted(self.lib.glob("jamm-*.jar"))
        return [
            s.java, f"@{CONF / 'jvm17.args'}",
            f"-Xms{self.initial_heap}", f"-Xmx{self.heap}", "-Xss256k", *self.jvm_options(),
            "-XX:+HeapDumpOnOutOfMemoryError",
            f"-XX:HeapDumpPath={h / 'logs'}",
            *([f"-javaagent:{jamm[0]}"] if jamm else []),
            "-Djava.net.preferIPv4Stack=true",
            f"-Djava.io.tmpdir={h / 'tmp'}", f"-Djna.tmpdir={h / 'tmp'}",
            f"-Dcassandra.config=file://{self.conf_dir / 'cassandra.yaml'}",
            f"-Dcassandra.storagedir={h / 'data'}", f"-Dcassandra.logdir={h / 'logs'}",
            f"-Dlogback.configurationFile=file://{CONF / 'logback.xml'}",
            "-Dcassandra-foreground=yes",
            f"-Dcassandra.jmx.local.port={self.jmx_port}",
            "-Dcassandra.skip_wait_for_gossip_to_settle=0", f"-Dcassandra.ring_delay_ms={self.ring_delay_ms}",
            "-Dcassandra.superuser_setup_delay_ms=0",
            "-cp", f"{CONF}:{self.lib}/*", "org.apache.cassandra.service.CassandraDaemon",
        ]

    def probe(self) -> str:
        from cassandra.cluster import Cluster  # imported late: `status` works without a venv

        cluster = Cluster([self.address], port=self.settings.ports.cassandra,
                          connect_timeout=3, control_connection_timeout=3)
        try:
            session = cluster.connect()
            row = session.execute("SELECT release_version FROM system.local", timeout=5).one()
            return f"CQL {self.address}:{self.settings.ports.cassandra}, release {row.release_version}"
        finally:
            cluster.shutdown()
