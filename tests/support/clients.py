"""Clients for the backing services, built from the endpoints the stack fixture resolved."""

from __future__ import annotations

import base64
import json
import urllib.request
from typing import Any

from include.stack.endpoints import Endpoints


def cassandra_cluster(ep: Endpoints):
    from cassandra.cluster import Cluster

    return Cluster(ep.cassandra_hosts.split(","), port=ep.cassandra_port, connect_timeout=10)


def s3_client(ep: Endpoints):
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3", endpoint_url=ep.s3_endpoint, region_name=ep.s3_region,
        aws_access_key_id=ep.s3_access_key, aws_secret_access_key=ep.s3_secret_key,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3},
                      request_checksum_calculation="when_required",
                      response_checksum_validation="when_required"),
    )


def opensearch_client(ep: Endpoints):
    from opensearchpy import OpenSearch

    return OpenSearch(hosts=[ep.opensearch_url], timeout=30)


def amqp_parameters(ep: Endpoints):
    import pika

    return pika.URLParameters(ep.amqp_url)


def rabbitmq_management(ep: Endpoints, path: str) -> Any:
    """GET on the management API with the AMQP URL's credentials."""
    params = amqp_parameters(ep)
    token = base64.b64encode(f"{params.credentials.username}:{params.credentials.password}".encode()).decode()
    req = urllib.request.Request(ep.rabbitmq_management_url.rstrip("/") + path,
                                 headers={"Authorization": f"Basic {token}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)
