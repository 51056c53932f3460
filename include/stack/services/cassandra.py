"""Apache Cassandra 5.0 from the Maven Central jars, launched straight on the JVM (Java 17)."""

from __future__ import annotations

from pathlib import Path

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

    def prepare(self) -> None:
        artifacts.fetch(self.settings, "cassandra")
        for sub in ("data", "logs", "tmp", "conf"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        s, p = self.settings, self.settings.ports
        config = {
            "cluster_name": "mailserver-local",
            "num_tokens": 16,
            "allocate_tokens_for_local_replication_factor": 1,
            "partitioner": "org.apache.cassandra.dht.Murmur3Partitioner",
            "endpoint_snitch": "SimpleSnitch",
            "seed_provider": [{
                "class_name": "org.apache.cassandra.locator.SimpleSeedProvider",
                "parameters": [{"seeds": f"{s.host}:{p.cassandra_storage}"}],
            }],
            "listen_address": s.host,
            "rpc_address": s.host,
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
        (self.conf_dir / "cassandra.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    def start(self) -> None:
        s, h = self.settings, self.home
        jamm = sorted(self.lib.glob("jamm-*.jar"))
        argv = [
            s.java, f"@{CONF / 'jvm17.args'}",
            f"-Xms{s.heaps.cassandra}", f"-Xmx{s.heaps.cassandra}", "-Xss256k",
            "-XX:+UseG1GC", "-XX:MaxDirectMemorySize=512m", "-XX:+HeapDumpOnOutOfMemoryError",
            f"-XX:HeapDumpPath={h / 'logs'}",
            *([f"-javaagent:{jamm[0]}"] if jamm else []),
            "-Djava.net.preferIPv4Stack=true",
            f"-Djava.io.tmpdir={h / 'tmp'}", f"-Djna.tmpdir={h / 'tmp'}",
            f"-Dcassandra.config=file://{self.conf_dir / 'cassandra.yaml'}",
            f"-Dcassandra.storagedir={h / 'data'}", f"-Dcassandra.logdir={h / 'logs'}",
            f"-Dlogback.configurationFile=file://{CONF / 'logback.xml'}",
            "-Dcassandra-foreground=yes",
            f"-Dcassandra.jmx.local.port={s.ports.cassandra_jmx}",
            "-Dcassandra.skip_wait_for_gossip_to_settle=0", "-Dcassandra.ring_delay_ms=1000",
            "-Dcassandra.superuser_setup_delay_ms=0",
            "-cp", f"{CONF}:{self.lib}/*", "org.apache.cassandra.service.CassandraDaemon",
        ]
        processes.spawn(argv, pid_file=self.pid_file, log_file=self.log_file, cwd=h)

    def probe(self) -> str:
        from cassandra.cluster import Cluster  # imported late: `status` works without a venv

        cluster = Cluster([self.settings.host], port=self.settings.ports.cassandra,
                          connect_timeout=3, control_connection_timeout=3)
        try:
            session = cluster.connect()
            row = session.execute("SELECT release_version FROM system.local", timeout=5).one()
            return f"CQL {self.settings.host}:{self.settings.ports.cassandra}, release {row.release_version}"
        finally:
            cluster.shutdown()
