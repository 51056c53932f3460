"""docker-compose.yaml stays in step with the local stack: same services, ports, loopback only."""

from __future__ import annotations

from pathlib import Path

import yaml

from include.stack.settings import Ports

COMPOSE = yaml.safe_load((Path(__file__).resolve().parents[2] / "docker-compose.yaml").read_text())


def _published(service: str) -> dict[int, str]:
    out = {}
    for spec in COMPOSE["services"][service].get("ports", []):
        host_ip, host_port, _container = str(spec).split(":")
        out[int(host_port)] = host_ip
    return out


def test_services_of_the_platform_are_all_there():
    expected = {"cassandra", "opensearch", "s3", "rabbitmq", "postgres", "spark-master", "spark-worker",
                "airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer",
                "mailserver"}
    assert expected <= set(COMPOSE["services"])


def test_ports_match_the_local_stack_and_bind_loopback_only():
    p = Ports()
    assert p.cassandra in _published("cassandra")
    assert p.opensearch in _published("opensearch")
    assert p.s3 in _published("s3")
    assert {p.amqp, p.rabbitmq_management} <= set(_published("rabbitmq"))
    assert p.postgres in _published("postgres")
    assert p.airflow in _published("airflow-apiserver")
    for name in COMPOSE["services"]:
        for port, host_ip in _published(name).items():
            assert host_ip == "127.0.0.1", f"{name} publishes {port} beyond loopback"
