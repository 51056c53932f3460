"""The mail queues' RabbitMQ arguments are James's (``RabbitMQConfiguration.workQueueArgumentsBuilder``),
and the settings that choose them (``MAILSERVER_QUEUE_QUORUM*``) default as James does."""

from __future__ import annotations

import pytest

from mailserver.queue.rabbitmq import DistributedMailQueueFactory, queue_arguments
from mailserver.rabbitmq_queues import QueueType
from mailserver.runtime.settings import ServeSettings, SettingsError


def test_classic_v2_by_default_as_james():
    assert queue_arguments() == {"x-queue-version": 2}


def test_quorum_with_its_initial_group_size_and_optional_delivery_limit():
    assert queue_arguments(quorum=True) == {"x-queue-type": "quorum", "x-quorum-initial-group-size": 1}
    assert queue_arguments(quorum=True, replication_factor=3, delivery_limit=10) == {
        "x-queue-type": "quorum", "x-quorum-initial-group-size": 3, "x-delivery-limit": 10}


def test_settings_default_to_classic_queues():
    settings = ServeSettings.from_env({})
    assert settings.queue_type == QueueType(quorum=False, replication_factor=1, delivery_limit=None)


def test_quorum_settings():
    settings = ServeSettings.from_env({"MAILSERVER_QUEUE_QUORUM": "true",
                                       "MAILSERVER_QUEUE_QUORUM_REPLICATION_FACTOR": "3",
                                       "MAILSERVER_QUEUE_QUORUM_DELIVERY_LIMIT": "5"})
    assert settings.queue_type == QueueType(quorum=True, replication_factor=3, delivery_limit=5)


@pytest.mark.parametrize("name", ["MAILSERVER_QUEUE_QUORUM_REPLICATION_FACTOR",
                                  "MAILSERVER_QUEUE_QUORUM_DELIVERY_LIMIT"])
def test_non_positive_quorum_settings_are_refused(name):
    with pytest.raises(SettingsError, match=name):
        ServeSettings.from_env({name: "0"})


def test_the_factory_refuses_a_non_positive_replication_factor():
    with pytest.raises(ValueError, match="replication factor"):
        DistributedMailQueueFactory("amqp://guest:guest@127.0.0.1:1/%2F", None, None, quorum=True,
                                    quorum_replication_factor=0)
