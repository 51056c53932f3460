"""What a test's distributed mail queues leave on RabbitMQ, deleted: their queues and exchanges."""

from __future__ import annotations

from typing import Any

import pika

from mailserver.queue.rabbitmq import DistributedMailQueueFactory
from tests.support.clients import amqp_parameters


def delete_rabbitmq_objects(stack: Any, factory: DistributedMailQueueFactory) -> None:
    """Delete every queue and exchange the factory's queues declared (a missing one is fine)."""
    connection = pika.BlockingConnection(amqp_parameters(stack))
    try:
        for queue in factory.opened():
            n = queue.names
            for name in (n.workqueue, n.dead_letter_queue, *(n.delay_queue(ms) for ms in queue.delays())):
                channel = connection.channel()
                try:
                    channel.queue_delete(name)
                except pika.exceptions.ChannelClosedByBroker:
                    pass
            for name in (n.exchange, n.dead_letter_exchange, n.delay_exchange):
                channel = connection.channel()
                try:
                    channel.exchange_delete(name)
                except pika.exceptions.ChannelClosedByBroker:
                    pass
    finally:
        connection.close()
