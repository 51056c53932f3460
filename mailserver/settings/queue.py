"""The mail queues on RabbitMQ, and the size limits of their health check."""

from __future__ import annotations

from .base import EnvironmentSettings, setting
from .values import Flag, Positive


class QueueSettings(EnvironmentSettings):
    quorum: Flag = setting("MAILSERVER_QUEUE_QUORUM", False, "Quorum queues (James's quorum.queues.enable); "
                           "classic otherwise.", "boolean")
    quorum_replication_factor: Positive = setting("MAILSERVER_QUEUE_QUORUM_REPLICATION_FACTOR", 1, "Initial group "
                                                  "size of a quorum queue.", "integer")
    quorum_delivery_limit: Positive | None = setting("MAILSERVER_QUEUE_QUORUM_DELIVERY_LIMIT", None, "Deliveries "
                                                     "of a message before it is dropped (unset: none).", "integer")
    size_limits: str = setting("MAILSERVER_QUEUE_SIZE_LIMITS", "", "Limits of the MailQueueSize health check, "
                               "e.g. `outgoing=5000` (the spool's is MAILSERVER_SMTP_SPOOL_LIMIT).",
                               "queue=count,...")
