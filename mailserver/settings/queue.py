"""The size limits of the mail queues' health check (their queue type is a RabbitMQ setting)."""

from __future__ import annotations

from .base import EnvironmentSettings, setting


class QueueSettings(EnvironmentSettings):
    size_limits: str = setting("MAILSERVER_QUEUE_SIZE_LIMITS", "", "Limits of the MailQueueSize health check, "
                               "e.g. `outgoing=5000` (the spool's is MAILSERVER_SMTP_SPOOL_LIMIT).",
                               "queue=count,...")
