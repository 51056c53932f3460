"""S3Proxy with the filesystem backend: a real S3 HTTP API storing objects on local disk."""

from __future__ import annotations

from pathlib import Path

from .. import artifacts, processes
from .base import Service

LOGBACK = Path(__file__).resolve().parents[1] / "conf" / "s3proxy" / "logback.xml"


class S3Proxy(Service):
    name = "s3"
    start_timeout = 90.0

    def prepare(self) -> None:
        artifacts.fetch(self.settings, "s3proxy")
        (self.home / "data").mkdir(parents=True, exist_ok=True)
        (self.home / "tmp").mkdir(parents=True, exist_ok=True)
        s, c = self.settings, self.settings.credentials
        props = "\n".join([
            f"s3proxy.endpoint=http://{s.host}:{s.ports.s3}",
            "s3proxy.authorization=aws-v2-or-v4",
            f"s3proxy.identity={c.s3_access_key}",
            f"s3proxy.credential={c.s3_secret_key}",
            "jclouds.provider=filesystem-nio2",
            f"jclouds.filesystem.basedir={self.home / 'data'}",
            "",
        ])
        conf = self.home / "s3proxy.conf"
        conf.write_text(props)
        conf.chmod(0o600)  # holds the secret key

    def start(self) -> None:
        s = self.settings
        lib = artifacts.lib_dir(s, "s3proxy")
        argv = [
            s.java, "-Xms64m", f"-Xmx{s.heaps.s3proxy}", "-XX:+UseSerialGC",
            f"-Djava.io.tmpdir={self.home / 'tmp'}",
            f"-Dlogback.configurationFile=file://{LOGBACK}",
            "-cp", f"{lib}/*", "org.gaul.s3proxy.Main",
            "--properties", str(self.home / "s3proxy.conf"),
        ]
        processes.spawn(argv, pid_file=self.pid_file, log_file=self.log_file, cwd=self.home)

    def probe(self) -> str:
        import boto3  # imported late: `status` works without a venv
        from botocore.config import Config

        s, c = self.settings, self.settings.credentials
        endpoint = f"http://{s.host}:{s.ports.s3}"
        client = boto3.client(
            "s3", endpoint_url=endpoint, region_name="us-east-1",
            aws_access_key_id=c.s3_access_key, aws_secret_access_key=c.s3_secret_key,
            config=Config(s3={"addressing_style": "path"}, connect_timeout=3, read_timeout=5,
                          retries={"max_attempts": 1},
                          request_checksum_calculation="when_required",
                          response_checksum_validation="when_required"),
        )
        buckets = client.list_buckets().get("Buckets", [])
        return f"{endpoint} (signed ListBuckets: {len(buckets)} buckets)"
