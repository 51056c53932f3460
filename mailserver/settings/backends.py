"""The backends, under the names every part of the platform shares (James's images use them too)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from mailserver.rabbitmq_queues import QueueType

from .base import EnvironmentSettings, setting
from .values import CommaList, Flag, Positive, PositiveSeconds, Whole, whole


class CassandraSettings(EnvironmentSettings):
    hosts: CommaList = setting("CASSANDRA_HOSTS", ("127.0.0.1",), "Contact points of the cluster.", "comma list")
    port: Whole = setting("CASSANDRA_PORT", 9042, "CQL native port of every contact point.", "integer")
    keyspace: str = setting("CASSANDRA_KEYSPACE", "james_keyspace", "Keyspace of every table (James's default name).",
                            "text")
    username: str | None = setting("CASSANDRA_USERNAME", None, "Login, when the cluster authenticates.", "text",
                                   verbatim=True)
    password: str | None = setting("CASSANDRA_PASSWORD", None, "Password of that login.", "secret", secret=True,
                                   verbatim=True)
    local_dc: str | None = setting("CASSANDRA_LOCAL_DC", None, "Datacenter the driver prefers (unset: any).", "text")
    replication: str | None = setting(
        "CASSANDRA_REPLICATION", None, "Replication of a keyspace created here: `SimpleStrategy:1` or "
        "`NetworkTopologyStrategy:dc1=3,dc2=3`.", "strategy:options", shown_default="SimpleStrategy:1")


class S3Settings(EnvironmentSettings):
    endpoint: str | None = setting("S3_ENDPOINT", None, "S3 endpoint URL (required).", "URL")
    access_key: str | None = setting("S3_ACCESS_KEY", None, "Access key id (required).", "text", verbatim=True)
    secret_key: str | None = setting("S3_SECRET_KEY", None, "Secret access key (required).", "secret", secret=True,
                                     verbatim=True)
    region: str = setting("S3_REGION", "us-east-1", "Region the requests are signed for.", "text")
    bucket_prefix: str = setting("S3_BUCKET_PREFIX", "", "Prefix of every bucket but the default one.", "text")
    default_bucket: str | None = setting("S3_DEFAULT_BUCKET", None, "James's `objectstorage.namespace`: the default "
                                         "bucket, never prefixed (unset: `default`, prefixed by S3_BUCKET_PREFIX).",
                                         "text")
    max_pool_connections: Whole = setting("S3_MAX_POOL_CONNECTIONS", 64,
                                          "HTTP connections kept to S3, shared by every thread of the process.",
                                          "integer")


class AwsSettings(EnvironmentSettings):
    """AWS's own names, read by botocore itself; the requests the server signs itself (DirectS3) follow them too."""

    ca_bundle: str | None = setting("AWS_CA_BUNDLE", None, "Private CA to trust for an https S3 endpoint.", "path")


class RabbitMQSettings(EnvironmentSettings):
    amqp_url: str | None = setting("AMQP_URL", None, "RabbitMQ for the mail queues and the event bus (required "
                                   "by `serve`).", "URL")
    management_url: str | None = setting("RABBITMQ_MANAGEMENT_URL", None, "RabbitMQ's management API: queue "
                                         "sizes and the event-bus groups check (unset: neither).", "URL")
    # One queue type for every work queue, mail queues and event bus alike, as James's rabbitmq.properties.
    quorum: Flag = setting("MAILSERVER_QUEUE_QUORUM", False, "Quorum queues for the mail queues and the event bus "
                           "(James's `quorum.queues.enable`); classic `x-queue-version: 2` otherwise.", "boolean")
    quorum_replication_factor: Positive = setting("MAILSERVER_QUEUE_QUORUM_REPLICATION_FACTOR", 1, "Initial group "
                                                  "size of a quorum queue (`quorum.queues.replication.factor`).",
                                                  "integer")
    quorum_delivery_limit: Positive | None = setting("MAILSERVER_QUEUE_QUORUM_DELIVERY_LIMIT", None, "Deliveries "
                                                     "of a message before it is dropped "
                                                     "(`quorum.queues.delivery.limit`; unset: none).", "integer")

    def queue_type(self) -> QueueType:
        return QueueType(self.quorum, self.quorum_replication_factor, self.quorum_delivery_limit)


class OpenSearchSettings(EnvironmentSettings):
    url: str | None = setting("OPENSEARCH_URL", None, "OpenSearch, James's `opensearch.hosts` (unset: no search).",
                              "comma list of URLs")
    index_mailbox_name: str | None = setting("OPENSEARCH_INDEX_MAILBOX_NAME", None, "Mailbox index "
                                             "(`opensearch.index.mailbox.name`).", "text", shown_default="mailbox_v1")
    index_name: str | None = setting("OPENSEARCH_INDEX_NAME", None, "Legacy name of the mailbox index, used when "
                                     "the one above is unset.", "text")
    alias_read_mailbox_name: str | None = setting("OPENSEARCH_ALIAS_READ_MAILBOX_NAME", None, "Read alias of the "
                                                  "mailbox index.", "text", shown_default="mailboxReadAlias")
    alias_read_name: str | None = setting("OPENSEARCH_ALIAS_READ_NAME", None, "Legacy name of the read alias.", "text")
    alias_write_mailbox_name: str | None = setting("OPENSEARCH_ALIAS_WRITE_MAILBOX_NAME", None, "Write alias of the "
                                                   "mailbox index.", "text", shown_default="mailboxWriteAlias")
    alias_write_name: str | None = setting("OPENSEARCH_ALIAS_WRITE_NAME", None, "Legacy name of the write alias.",
                                           "text")
    shards: Annotated[int, whole(1)] = setting("OPENSEARCH_NB_SHARDS", 5, "Shards of a created index.", "integer")
    replicas: Annotated[int, whole(0)] = setting("OPENSEARCH_NB_REPLICA", 1, "Replicas of a created index.",
                                                 "integer")
    wait_for_active_shards: Annotated[int, whole(0)] = setting(
        "OPENSEARCH_INDEX_WAIT_FOR_ACTIVE_SHARDS", 1, "Active shards a write waits for.", "integer")
    index_attachments: Flag = setting("OPENSEARCH_INDEX_ATTACHMENTS", True, "Index attachments' text.", "boolean")
    index_headers: Flag = setting("OPENSEARCH_INDEX_HEADERS", True, "Index every header field.", "boolean")
    index_body: Flag = setting("OPENSEARCH_INDEX_BODY", True, "Index the body.", "boolean")
    index_user: Flag = setting("OPENSEARCH_INDEX_USER", True, "Index the owner (James: false).", "boolean")
    request_timeout: PositiveSeconds = setting("OPENSEARCH_REQUEST_TIMEOUT_SECONDS", timedelta(seconds=30),
                                               "One request's timeout.", "duration (bare number: seconds)")
    state_index: str = setting("OPENSEARCH_STATE_INDEX", "mailserver_search_state", "Index of the indexer's own "
                               "state (ours).", "text")
