"""RabbitMQManagement: the vhost and credentials of the AMQP URL, the queue listing, its errors."""

from __future__ import annotations

import socket
from urllib.parse import quote

import httpx
import pytest

from mailserver.rabbitmq_management import ManagementAPIError, RabbitMQManagement
from tests.unit.plugins.rabbitmq_management_server import PASSWORD, USER, Broker, serving


def amqp_url(vhost: str, password: str = PASSWORD) -> str:
    return f"amqp://{USER}:{quote(password, safe='')}@127.0.0.1:5672/{quote(vhost, safe='')}"


def test_queue_names_are_those_of_the_vhost_of_the_amqp_url():
    broker = Broker(vhosts={"/", "mail/prod"})
    broker.queue("JamesMailQueue-workqueue-spool", vhost="mail/prod")
    broker.queue("elsewhere", vhost="/")
    with serving(broker) as port, RabbitMQManagement(f"http://127.0.0.1:{port}/", amqp_url("mail/prod")) as client:
        assert client.vhost == "mail/prod"
        assert client.queue_names() == ["JamesMailQueue-workqueue-spool"]
    assert ("GET", "/api/queues/mail%2Fprod?columns=name") in broker.requests


def test_an_error_answer_raises_with_rabbitmq_reason():
    with serving(Broker()) as port, RabbitMQManagement(f"http://127.0.0.1:{port}", amqp_url("/", "wrong")) as client:
        with pytest.raises(ManagementAPIError, match="401: Login failed") as raised:
            client.get("/api/bindings/%2F")
    assert raised.value.status_code == 401


def test_an_unreachable_broker_raises_a_transport_error():
    with socket.socket() as free:   # a port just released: the connection is refused
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with RabbitMQManagement(f"http://127.0.0.1:{port}", amqp_url("/"), timeout=2.0) as client:
        with pytest.raises(httpx.TransportError):
            client.queue_names()

