"""Tables of older James releases that migrations 11->12 .. 14->15 read.

Never part of ``create_schema``'s defaults: they exist only in keyspaces written by older
releases, and tests create them to build such a keyspace.
"""

from __future__ import annotations

from mailserver.cassandra.schema import Table, t

ATTACHMENT_MESSAGE_ID = t(
    "attachmentMessageId", "legacy", "Attachment -> owning messages (schema 5..11); folded into attachmentV2.",
    ["attachmentIdAsUUID"], {"attachmentIdAsUUID": "uuid", "messageId": "timeuuid", "attachmentId": "text"},
    ck=["messageId"])
CURRENT_QUOTA = t(
    "currentQuota", "legacy", "Mailbox current usage per quota root value (schema <= 12).",
    ["quotaRoot"], {"quotaRoot": "text", "messageCount": "counter", "storage": "counter"})
MAX_QUOTA = t(
    "maxQuota", "legacy", "Mailbox limits per quota root value (schema <= 13).",
    ["quotaRoot"], {"quotaRoot": "text", "maxMessageCount": "bigint", "maxStorage": "bigint"})
DOMAIN_MAX_QUOTA = t(
    "domainMaxQuota", "legacy", "Mailbox limits per domain (schema <= 13).",
    ["domain"], {"domain": "text", "maxMessageCount": "bigint", "maxStorage": "bigint"})
DEFAULT_MAX_QUOTA = t(
    "defaultMaxQuota2", "legacy", "Global mailbox limits, one row keyed 'default' (schema <= 13).",
    ["key"], {"key": "text", "message": "bigint", "storage": "bigint"})
SIEVE_CLUSTER_QUOTA = t(
    "sieve_cluster_quota", "legacy", "Global sieve limit, one row named 'cluster_quota' (schema <= 14).",
    ["name"], {"name": "text", "value": "bigint"})
SIEVE_QUOTA = t(
    "sieve_quota", "legacy", "Sieve limit per user (schema <= 14).",
    ["user_name"], {"user_name": "text", "quota": "bigint"})
SIEVE_SPACE = t(
    "sieve_space", "legacy", "Sieve space used per user (schema <= 14).",
    ["user_name"], {"user_name": "text", "space_used": "counter"})

LEGACY_TABLES: tuple[Table, ...] = (
    ATTACHMENT_MESSAGE_ID, CURRENT_QUOTA, MAX_QUOTA, DOMAIN_MAX_QUOTA, DEFAULT_MAX_QUOTA,
    SIEVE_CLUSTER_QUOTA, SIEVE_QUOTA, SIEVE_SPACE,
)
