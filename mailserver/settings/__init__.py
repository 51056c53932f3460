"""Every environment variable the mail server reads, typed, defaulted and documented in one tree.

One ``EnvironmentSettings`` per area (``AREAS``, in the order of docs/configuration.md); each
reader of the code builds its own configuration from its area's ``from_env(env)``.
"""

from __future__ import annotations

from .airflow import AirflowSettings
from .backends import AwsSettings, CassandraSettings, OpenSearchSettings, RabbitMQSettings, S3Settings
from .base import EnvironmentSettings, SettingsError
from .blob import BlobSettings
from .delivery import DeliverySettings
from .events import EventSettings
from .imap import ImapSettings
from .jmap import JmapSettings
from .node import NodeSettings, ReadCacheSettings
from .observability import LoggingSettings
from .queue import QueueSettings
from .security import AuthThrottleSettings
from .smtp import SmtpSettings
from .tasks import TaskSettings
from .users import UsersSettings
from .vault import VaultSettings
from .webadmin import WebAdminSettings

# area title -> its settings
AREAS: dict[str, type[EnvironmentSettings]] = {
    "Node": NodeSettings,
    "SMTP": SmtpSettings,
    "IMAP": ImapSettings,
    "JMAP": JmapSettings,
    "Mail processing": DeliverySettings,
    "Mail queues": QueueSettings,
    "Event bus": EventSettings,
    "Users": UsersSettings,
    "Read caches": ReadCacheSettings,
    "Blob store": BlobSettings,
    "Deleted messages vault": VaultSettings,
    "Authentication throttle": AuthThrottleSettings,
    "WebAdmin": WebAdminSettings,
    "Logging": LoggingSettings,
    "Tasks": TaskSettings,
    "Airflow": AirflowSettings,
    "Cassandra": CassandraSettings,
    "S3": S3Settings,
    "AWS": AwsSettings,
    "RabbitMQ": RabbitMQSettings,
    "OpenSearch": OpenSearchSettings,
}

__all__ = [
    "AREAS",
    "AirflowSettings",
    "AuthThrottleSettings",
    "AwsSettings",
    "BlobSettings",
    "CassandraSettings",
    "DeliverySettings",
    "EnvironmentSettings",
    "EventSettings",
    "ImapSettings",
    "JmapSettings",
    "LoggingSettings",
    "NodeSettings",
    "OpenSearchSettings",
    "QueueSettings",
    "RabbitMQSettings",
    "ReadCacheSettings",
    "S3Settings",
    "SettingsError",
    "SmtpSettings",
    "TaskSettings",
    "UsersSettings",
    "VaultSettings",
    "WebAdminSettings",
    "variables",
]


def variables() -> set[str]:
    """Every variable of the tree."""
    return {field.alias for area in AREAS.values() for field in area.model_fields.values() if field.alias}
