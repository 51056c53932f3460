"""A mail queue's work and dead-letter queues as ``QueueSpec``, James's ``RabbitMQMailQueueFactory``.

Both get ``workQueueArgumentsBuilder()``'s arguments (the configured ``QueueType``), the work queue
also dead-lettering to the queue's dead-letter exchange. ``DistributedMailQueue.declare`` declares
exactly these, and a queue migration re-declares a queue found otherwise as these. The delay
queues are not among them: their arguments (a TTL, dead-lettering to the work exchange) do not
depend on the configuration.
"""

from __future__ import annotations

from collections.abc import Collection

from mailserver.queue.naming import PREFIX, QueueNames, queue_name_of_workqueue
from mailserver.rabbitmq_queues import BindingSpec, QueueSpec, QueueType

DEAD_LETTER_QUEUE_PREFIX = f"{PREFIX}-dead-letter-queue-"


def mail_queue_specs(names: QueueNames, queue_type: QueueType) -> tuple[QueueSpec, QueueSpec]:
    """The work queue and the dead-letter queue of one mail queue."""
    base = queue_type.arguments()
    work = QueueSpec(names.workqueue, {**base, "x-dead-letter-exchange": names.dead_letter_exchange},
                     bindings=(BindingSpec(names.exchange),))
    dead_letters = QueueSpec(names.dead_letter_queue, base, bindings=(BindingSpec(names.dead_letter_exchange),))
    return work, dead_letters


def mail_queues_specs(queue_type: QueueType, present: Collection[str]) -> list[QueueSpec]:
    """The work and dead-letter queues among ``present`` (queue names on the broker), by mail queue."""
    mail_queues = set()
    for queue in present:
        name = queue_name_of_workqueue(queue)
        if name is None and queue.startswith(DEAD_LETTER_QUEUE_PREFIX):
            name = queue[len(DEAD_LETTER_QUEUE_PREFIX):]
        if name:
            mail_queues.add(name)
    return [spec for name in sorted(mail_queues) for spec in mail_queue_specs(QueueNames(name), queue_type)
            if spec.name in present]
