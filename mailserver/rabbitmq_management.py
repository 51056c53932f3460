"""A minimal client of the RabbitMQ management HTTP API (queue listing), as James uses it.

Shared by the mail queues and the event bus (registered groups), so it stands below both.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
import urllib.request
from typing import Any

import pika


class RabbitMQManagement:
    def __init__(self, management_url: str, amqp_url: str, timeout: float = 10.0) -> None:
        params = pika.URLParameters(amqp_url)
        self.base = management_url.rstrip("/")
        self.vhost = params.virtual_host
        credentials = params.credentials
        if not isinstance(credentials, pika.PlainCredentials):
            raise ValueError("the management API needs the user and password of the AMQP URL")
        user, password = credentials.username, credentials.password
        self._auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self.timeout = timeout

    def get(self, path: str) -> Any:
        req = urllib.request.Request(self.base + path, headers={"Authorization": self._auth})
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:
            return json.load(resp)

    def queue_names(self) -> list[str]:
        """Every queue name of the vhost of the AMQP URL."""
        vhost = urllib.parse.quote(self.vhost, safe="")
        rows = self.get(f"/api/queues/{vhost}?columns=name")
        return [row["name"] for row in rows]
