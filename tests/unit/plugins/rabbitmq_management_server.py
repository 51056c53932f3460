"""A stand-in for RabbitMQ's management API on a loopback port: the few routes the plugins call.

Answers as RabbitMQ 3.10 does (checked against the real broker): 404 ``{"error": "Object Not Found"}``
for an unknown queue or vhost, 400 ``not empty`` for ``DELETE ...?if-empty=true`` on a queue with
messages, 503 with ``alarms`` from ``/api/health/checks/alarms``; basic auth or 401. The real broker
is exercised in ``tests/integration/maintenance/test_rabbitmq_management_hook.py``.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

USER, PASSWORD = "ops", "s3cret"


@dataclass
class Broker:
    vhosts: set[str] = field(default_factory=lambda: {"/"})
    queues: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    bindings: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    alarms: list[dict[str, str]] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    port: int = 0     # set by serving()

    def queue(self, name: str, messages: int = 0, *, vhost: str = "/", unacked: int = 0, consumers: int = 0,
              stats: bool = True) -> None:
        info: dict[str, Any] = {"name": name, "vhost": vhost, "consumers": consumers}
        if stats:   # a queue just declared has no statistics yet
            info.update(messages=messages + unacked, messages_ready=messages, messages_unacknowledged=unacked)
        self.queues[(vhost, name)] = info


def _handler(broker: Broker) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:   # quiet
            pass

        def _send(self, code: int, body: Any = None) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self) -> bool:
            expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
            if self.headers.get("Authorization") != expected:
                self._send(401, {"error": "not_authorised", "reason": "Login failed"})
                return False
            return True

        def _route(self, method: str) -> None:
            broker.requests.append((method, self.path))
            if not self._authorized():
                return
            url = urlsplit(self.path)
            parts = [unquote(p) for p in url.path.split("/")[2:]]   # after /api/
            query = parse_qs(url.query)
            not_found = {"error": "Object Not Found", "reason": "Not Found"}
            if method == "GET" and parts[:3] == ["health", "checks", "alarms"]:
                if broker.alarms:
                    return self._send(503, {"status": "failed", "reason": "There are alarms in effect in the cluster",
                                            "alarms": broker.alarms})
                return self._send(200, {"status": "ok"})
            if parts[0] == "vhosts" and method == "GET":
                return self._send(200, {"name": parts[1]}) if parts[1] in broker.vhosts else self._send(404, not_found)
            if parts[0] == "bindings" and method == "GET":
                return self._send(200, broker.bindings.get(parts[1], []))
            if parts[0] == "queues" and len(parts) == 2 and method == "GET":
                return self._send(200, [q for (v, _), q in broker.queues.items() if v == parts[1]])
            if parts[0] == "queues" and len(parts) == 3:
                key = (parts[1], parts[2])
                if key not in broker.queues:
                    return self._send(404, not_found)
                if method == "GET":
                    return self._send(200, broker.queues[key])
                if method == "DELETE":
                    if query.get("if-empty") == ["true"] and broker.queues[key].get("messages"):
                        return self._send(400, {"error": "bad_request",
                                                "reason": f"queue '{key[1]}' in vhost '{key[0]}' not empty"})
                    del broker.queues[key]
                    return self._send(204)
            return self._send(404, not_found)

        def do_GET(self) -> None:
            self._route("GET")

        def do_DELETE(self) -> None:
            self._route("DELETE")

    return Handler


@contextmanager
def serving(broker: Broker) -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(broker))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    broker.port = server.server_address[1]
    try:
        yield broker.port
    finally:
        server.shutdown()
        server.server_close()


def connection(port: int, *, vhost: str = "/", password: str = PASSWORD, amqp_port: int = 5672) -> str:
    """``AIRFLOW_CONN_RABBITMQ_MANAGEMENT`` JSON, as include/connections.py builds it."""
    return json.dumps({"conn_type": "http", "host": "127.0.0.1", "port": port, "schema": "http", "login": USER,
                       "password": password, "extra": {"vhost": vhost, "amqp_host": "127.0.0.1",
                                                       "amqp_port": amqp_port}})
