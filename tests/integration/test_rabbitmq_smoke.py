"""RabbitMQ: confirmed persistent publish, consume with manual ack, management API bindings."""

from __future__ import annotations

import pika
import pytest

from tests.support.clients import amqp_parameters, rabbitmq_management

pytestmark = pytest.mark.integration


def test_publish_confirm_consume_ack_and_list_bindings(stack, unique):
    exchange, queue = f"smoke-exchange-{unique}", f"smoke-queue-{unique}"
    connection = pika.BlockingConnection(amqp_parameters(stack))
    try:
        channel = connection.channel()
        channel.confirm_delivery()  # basic_publish now raises unless the broker confirms
        channel.exchange_declare(exchange, exchange_type="direct", durable=True)
        channel.queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum"})
        channel.queue_bind(queue, exchange, routing_key="mail")

        for i in range(3):
            channel.basic_publish(exchange, "mail", f"mail-{i}".encode(),
                                  properties=pika.BasicProperties(delivery_mode=pika.DeliveryMode.Persistent),
                                  mandatory=True)

        received = []
        for _ in range(3):
            method, _props, body = channel.basic_get(queue, auto_ack=False)
            assert method is not None
            received.append(body.decode())
            channel.basic_ack(method.delivery_tag)
        assert received == ["mail-0", "mail-1", "mail-2"]
        assert channel.queue_declare(queue, passive=True).method.message_count == 0

        bindings = rabbitmq_management(stack, f"/api/exchanges/%2F/{exchange}/bindings/source")
        assert [(b["destination"], b["routing_key"]) for b in bindings] == [(queue, "mail")]
    finally:
        cleanup = connection.channel()
        cleanup.queue_delete(queue)
        cleanup.exchange_delete(exchange)
        connection.close()
