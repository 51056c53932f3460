"""How clients find the backing services: one set of environment variables for everyone.

The mail server, the Spark jobs, the tests and the Airflow connections all read these names,
so pointing the platform at another cluster is a matter of exporting different values.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from urllib.parse import quote

from .settings import StackSettings


@dataclass(frozen=True)
class Endpoints:
    cassandra_hosts: str
    cassandra_port: int
    opensearch_url: str
    s3_endpoint: str
    s3_access_key: str
    s3_secret_key: str
    s3_region: str
    amqp_url: str
    rabbitmq_management_url: str
    airflow_url: str

    @classmethod
    def from_settings(cls, s: StackSettings) -> Endpoints:
        c, p = s.credentials, s.ports
        return cls(
            cassandra_hosts=s.host,
            cassandra_port=p.cassandra,
            opensearch_url=f"http://{s.host}:{p.opensearch}",
            s3_endpoint=f"http://{s.host}:{p.s3}",
            s3_access_key=c.s3_access_key,
            s3_secret_key=c.s3_secret_key,
            s3_region="us-east-1",
            amqp_url=f"amqp://{quote(c.amqp_user, safe='')}:{quote(c.amqp_password, safe='')}@{s.host}:{p.amqp}/%2F",
            rabbitmq_management_url=f"http://{s.host}:{p.rabbitmq_management}",
            airflow_url=f"http://{s.host}:{p.airflow}",
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Endpoints | None:
        """Endpoints given explicitly in the environment, or None when any is missing."""
        env = os.environ if env is None else env
        optional = {"airflow_url": "http://127.0.0.1:8080", "s3_region": "us-east-1"}
        values: dict[str, object] = {}
        for name, var in ENV_NAMES.items():
            if env.get(var):
                values[name] = env[var]
            elif name in optional:
                values[name] = optional[name]
            else:
                return None
        values["cassandra_port"] = int(str(values["cassandra_port"]))
        return cls(**values)  # type: ignore[arg-type]

    def to_env(self) -> dict[str, str]:
        return {ENV_NAMES[k]: str(v) for k, v in asdict(self).items()}


ENV_NAMES = {
    "cassandra_hosts": "CASSANDRA_HOSTS",
    "cassandra_port": "CASSANDRA_PORT",
    "opensearch_url": "OPENSEARCH_URL",
    "s3_endpoint": "S3_ENDPOINT",
    "s3_access_key": "S3_ACCESS_KEY",
    "s3_secret_key": "S3_SECRET_KEY",
    "s3_region": "S3_REGION",
    "amqp_url": "AMQP_URL",
    "rabbitmq_management_url": "RABBITMQ_MANAGEMENT_URL",
    "airflow_url": "AIRFLOW_URL",
}
