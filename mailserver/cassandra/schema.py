"""The keyspace, user types and tables, named and shaped as the James distributed server's.

Each table carries its role (source of truth or projection, and of what) so that the
maintenance procedures and ``docs/schema.md`` (generated from this module:
``python -m mailserver.cassandra.schema``) say the same thing. Names are written in James's
mixedCase without quotes, so Cassandra stores them lower-cased exactly as James does.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mailserver.cassandra.config import CassandraConfig, validate_identifier

if TYPE_CHECKING:
    from cassandra.cluster import Session


@dataclass(frozen=True)
class UserType:
    name: str
    fields: tuple[tuple[str, str], ...]

    def create_cql(self, keyspace: str) -> str:
        cols = ", ".join(f"{n} {t}" for n, t in self.fields)
        return f"CREATE TYPE IF NOT EXISTS {keyspace}.{self.name} ({cols})"


@dataclass(frozen=True)
class Table:
    name: str
    area: str
    role: str
    columns: tuple[tuple[str, str], ...]
    partition_key: tuple[str, ...]
    clustering: tuple[tuple[str, str], ...] = ()   # (column, ASC|DESC)
    static: tuple[str, ...] = ()
    options: str = ""

    def create_cql(self, keyspace: str) -> str:
        cols = [f"{n} {t}{' static' if n in self.static else ''}" for n, t in self.columns]
        pk = self.partition_key[0] if len(self.partition_key) == 1 else "(" + ", ".join(self.partition_key) + ")"
        key = ", ".join([pk, *(c for c, _ in self.clustering)])
        cql = f"CREATE TABLE IF NOT EXISTS {keyspace}.{self.name} ({', '.join(cols)}, PRIMARY KEY ({key}))"
        opts = []
        if any(order == "DESC" for _, order in self.clustering):
            opts.append("CLUSTERING ORDER BY (" + ", ".join(f"{c} {o}" for c, o in self.clustering) + ")")
        if self.options:
            opts.append(self.options)
        return cql + (" WITH " + " AND ".join(opts) if opts else "")


def t(name: str, area: str, role: str, pk: Iterable[str], cols: dict[str, str],
      ck: Iterable[str | tuple[str, str]] = (), static: Iterable[str] = (), options: str = "") -> Table:
    clustering = tuple((c, "ASC") if isinstance(c, str) else c for c in ck)
    return Table(name, area, role, tuple(cols.items()), tuple(pk), clustering, tuple(static), options)


FLAG_COLUMNS = {f"flag{f}": "boolean" for f in ("Answered", "Deleted", "Draft", "Flagged", "Recent", "Seen", "User")}
MESSAGE_METADATA_COLUMNS = {
    "threadId": "timeuuid", "modSeq": "bigint", **FLAG_COLUMNS, "userFlags": "set<text>",
    "internalDate": "timestamp", "save_date": "timestamp", "bodyStartOctet": "int",
    "fullContentOctets": "bigint", "headerContent": "text",
}
LZ4 = "compression = {'class': 'LZ4Compressor'}"
JMAP_CHANGE_CACHING = "caching = {'keys': 'ALL', 'rows_per_partition': '10'}"
VAULT_CACHING = "caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'}"

TYPES: tuple[UserType, ...] = (
    UserType("mailboxBase", (("namespace", "text"), ("user", "text"))),
    UserType("attachments", (("id", "text"), ("name", "text"), ("cid", "text"), ("isInline", "boolean"))),
    UserType("zonedDateTime", (("date", "timestamp"), ("timeZone", "text"))),
    UserType("email_address", (("name", "text"), ("email", "text"))),
)

TABLES: tuple[Table, ...] = (
    # -- users and domains ------------------------------------------------------------------
    t("domains", "users", "Source of truth: the local domains.", ["domain"], {"domain": "text"}),
    t("user", "users", "Source of truth: users (lower-cased name, password hash and algorithm).", ["name"],
      {"name": "text", "realname": "text", "passwd": "text", "algorithm": "text",
       "authorized_users": "set<text>", "delegated_users": "set<text>"}),
    t("droplist", "users", "Source of truth: denied senders (address or domain) by owner scope "
      "(GLOBAL, DOMAIN, USER) and owner ('' for GLOBAL).", ["owner_scope", "owner", "denied_entity"],
      {"owner_scope": "text", "owner": "text", "denied_entity": "text", "denied_entity_type": "text"}),
    t("vacation", "users", "Source of truth: a user's vacation (out-of-office) settings (James's table).",
      ["account_id"], {"account_id": "text", "is_enabled": "boolean", "from_date": "frozen<zonedDateTime>",
                       "to_date": "frozen<zonedDateTime>", "text": "text", "subject": "text", "html": "text"}),
    t("custom_identity", "jmap", "Source of truth: the JMAP identities users and admins stored, and the changes "
      "made to the server-set ones (under their id).", ["user"],
      {"user": "text", "id": "uuid", "name": "text", "email": "text",
       "reply_to": "frozen<set<frozen<email_address>>>", "bcc": "frozen<set<frozen<email_address>>>",
       "text_signature": "text", "html_signature": "text", "sort_order": "int", "may_delete": "boolean"},
      ck=["id"]),
    # -- mailboxes ------------------------------------------------------------------------------
    t("mailbox", "mailbox", "Projection: mailbox by id (path and uidvalidity); truth is mailboxPathV3.",
      ["id"], {"id": "timeuuid", "mailboxbase": "frozen<mailboxBase>", "name": "text", "uidvalidity": "bigint"}),
    t("mailboxPathV3", "mailbox", "Source of truth: mailbox by path, unique through LWT; per-user listing.",
      ["namespace", "user"], {"namespace": "text", "user": "text", "mailboxName": "text",
                              "mailboxId": "timeuuid", "uidvalidity": "bigint"}, ck=["mailboxName"]),
    t("subscription", "mailbox", "Source of truth: IMAP subscriptions.", ["user"],
      {"user": "text", "mailbox": "text"}, ck=["mailbox"]),
    # -- messages -------------------------------------------------------------------------------
    t("imapUidTable", "message", "Source of truth: message M is in mailbox X with uid U and these flags.",
      ["messageId"], {"messageId": "timeuuid", "mailboxId": "timeuuid", "uid": "bigint", **MESSAGE_METADATA_COLUMNS},
      ck=["mailboxId", "uid"], options=LZ4 + " AND caching = {'keys': 'ALL', 'rows_per_partition': '100'}"),
    t("messageIdTable", "message", "Projection of imapUidTable keyed for IMAP access (mailbox, uid range).",
      ["mailboxId"], {"mailboxId": "timeuuid", "uid": "bigint", "messageId": "timeuuid", **MESSAGE_METADATA_COLUMNS},
      ck=["uid"], options=LZ4 + " AND caching = {'keys': 'ALL', 'rows_per_partition': '1000'}"),
    t("messageV3", "message", "Source of truth: mailbox-independent message metadata and its blob ids.",
      ["messageId"], {"messageId": "timeuuid", "internalDate": "timestamp", "bodyStartOctet": "int",
                      "bodyOctets": "bigint", "fullContentOctets": "bigint", "bodyContent": "text",
                      "headerContent": "text", "attachments": "list<frozen<attachments>>"}, options=LZ4),
    t("attachmentV2", "message", "Source of truth: attachment metadata and blob id, owning message.",
      ["idAsUUID"], {"idAsUUID": "uuid", "id": "text", "blobId": "text", "type": "text",
                     "message_id": "timeuuid", "size": "bigint"}),
    t("message_fast_view_projection", "message", "Projection (cache) of message content: preview, hasAttachment.",
      ["messageId"], {"messageId": "uuid", "preview": "text", "hasAttachment": "boolean"}, options=LZ4),
    # -- JMAP change logs ------------------------------------------------------------------------
    t("mailbox_change", "jmap", "Source of truth of Mailbox/changes: each change of a user's mailboxes, "
      "its state a timeuuid (rows live 60 days).", ["account_id"],
      {"account_id": "text", "state": "timeuuid", "date": "frozen<zonedDateTime>", "is_delegated": "boolean",
       "is_count_change": "boolean", "created": "frozen<set<timeuuid>>", "updated": "frozen<set<timeuuid>>",
       "destroyed": "frozen<set<timeuuid>>"}, ck=["state"], options=JMAP_CHANGE_CACHING),
    t("email_change", "jmap", "Source of truth of Email/changes: each change of a user's emails, "
      "its state a timeuuid (rows live 60 days).", ["account_id"],
      {"account_id": "text", "state": "timeuuid", "date": "frozen<zonedDateTime>", "is_delegated": "boolean",
       "created": "frozen<set<timeuuid>>", "updated": "frozen<set<timeuuid>>",
       "destroyed": "frozen<set<timeuuid>>"}, ck=["state"], options=JMAP_CHANGE_CACHING),
    t("thread_2", "message", "Thread guessing by hashed Message-ID/subject.", ["username", "mimeMessageId"],
      {"username": "text", "mimeMessageId": "int", "messageId": "timeuuid", "threadId": "timeuuid",
       "baseSubject": "int"}, ck=["messageId"]),
    t("thread_lookup_3", "message", "Reverse lookup of thread_2 rows, used on deletion.", ["threadId"],
      {"threadId": "timeuuid", "messageId": "timeuuid", "username": "text", "mimeMessageIds": "frozen<set<int>>"},
      ck=["messageId"]),
    # -- per-mailbox indexes and counters -----------------------------------------------------
    t("mailboxCounters", "mailbox", "Projection: message and unseen counts per mailbox (counters).",
      ["mailboxId"], {"mailboxId": "timeuuid", "count": "counter", "unseen": "counter"}),
    t("messageDeleted", "mailbox", "Projection: uids carrying \\Deleted.", ["mailboxId"],
      {"mailboxId": "timeuuid", "uid": "bigint"}, ck=["uid"]),
    t("mailboxRecents", "mailbox", "Projection: uids carrying \\Recent.", ["mailboxId"],
      {"mailboxId": "timeuuid", "recent_mesage_uid": "bigint"}, ck=["recent_mesage_uid"],
      options="gc_grace_seconds = 0"),
    t("firstUnseen", "mailbox", "Projection: unseen uids, to find the first unseen quickly.", ["mailboxId"],
      {"mailboxId": "timeuuid", "uid": "bigint"}, ck=["uid"]),
    t("applicableFlag", "mailbox", "Projection: user flags ever used in the mailbox.", ["mailboxId"],
      {"mailboxId": "timeuuid", "userFlags": "set<text>"}),
    t("messageCounter", "mailbox", "Generator: next uid per mailbox (LWT compare-and-set).", ["mailboxId"],
      {"mailboxId": "timeuuid", "nextUid": "bigint"}),
    t("modseq", "mailbox", "Generator: next modseq per mailbox (LWT compare-and-set).", ["mailboxId"],
      {"mailboxId": "timeuuid", "nextModseq": "bigint"}),
    # -- ACL --------------------------------------------------------------------------------------
    t("aclv2", "acl", "Projection of the ACL event-sourced aggregate: rights per mailbox and entry key.",
      ["id"], {"id": "timeuuid", "key": "text", "rights": "set<text>"}, ck=["key"]),
    t("UserMailboxACL", "acl", "Projection: mailboxes delegated to a user (positive user entries).",
      ["userName"], {"userName": "text", "mailboxid": "timeuuid", "rights": "text"}, ck=["mailboxid"],
      options="compaction = {'class': 'LeveledCompactionStrategy'}"),
    # -- quota ------------------------------------------------------------------------------------
    t("quotaCurrentValue", "quota", "Projection: current usage per quota root and component (counters).",
      ["identifier"], {"identifier": "text", "quotaComponent": "text", "quotaType": "text", "currentValue": "counter"},
      ck=["quotaComponent", "quotaType"]),
    t("quotaLimit", "quota", "Source of truth: limits at global, domain and user scope (null = unlimited).",
      ["quotaScope", "identifier"], {"quotaScope": "text", "identifier": "text", "quotaComponent": "text",
                                     "quotaType": "text", "quotaLimit": "bigint"}, ck=["quotaComponent", "quotaType"]),
    # -- recipient rewrite table ----------------------------------------------------------------
    t("rrt", "rrt", "Source of truth: recipient rewrite mappings by source user and domain.", ["user"],
      {"user": "text", "domain": "text", "mapping": "text"}, ck=["domain", "mapping"]),
    t("mappings_sources", "rrt", "Projection of rrt: sources of a mapping (reverse lookup).",
      ["mapping_type", "mapping_value"], {"mapping_type": "text", "mapping_value": "text", "source": "text"},
      ck=["source"]),
    # -- event bus and event sourcing -----------------------------------------------------------
    t("event_dead_letters", "events", "Source of truth: events a listener group failed to handle.",
      ["group"], {"group": "text", "insertionId": "uuid", "event": "text"}, ck=["insertionId"],
      options="gc_grace_seconds = 0"),
    t("group_table", "events", "Projection: groups having dead letters.", ["group"], {"group": "text"}),
    t("event_applied", "events", "Extension: events a counting listener group applied, written in the "
      "counter batch of its counts (a redelivery after a crash is skipped); weekly partitions, the "
      "two last weeks are read, older ones deleted.", ["group", "week", "shard"],
      {"group": "text", "week": "int", "shard": "int", "eventId": "uuid", "applied": "counter"}, ck=["eventId"]),
    t("eventStore", "events", "Source of truth of event-sourced aggregates (tasks, ACLs, required groups).",
      ["aggregateId"], {"aggregateId": "text", "eventId": "int", "snapshot": "int", "event": "text"},
      ck=["eventId"], static=["snapshot"], options="compaction = {'class': 'LeveledCompactionStrategy'}"),
    t("taskExecutionDetailsProjection", "tasks", "Projection of task events (James's and ours): status and report "
      "per task, what /tasks reads; updated conditionally on the status read.",
      ["taskId"], {"taskId": "uuid", "type": "text", "status": "text", "additionalInformation": "text",
                   "submittedNode": "text", "ranNode": "text", "cancelRequestedNode": "text",
                   "submittedDate": "frozen<zonedDateTime>", "startedDate": "frozen<zonedDateTime>",
                   "completedDate": "frozen<zonedDateTime>", "canceledDate": "frozen<zonedDateTime>",
                   "failedDate": "frozen<zonedDateTime>"}),
    t("taskExecutions", "tasks", "Our workers' claims: one row per task submitted by our nodes, its parameters, "
      "status and heartbeat; claims and status changes are lightweight transactions (IF status = ...), each "
      "then recorded as a James task event.", ["taskId"],
      {"taskId": "uuid", "type": "text", "parameters": "text", "status": "text", "additionalInformation": "text",
       "submittedNode": "text", "ranNode": "text", "cancelRequestedNode": "text", "submittedDate": "timestamp",
       "startedDate": "timestamp", "completedDate": "timestamp", "canceledDate": "timestamp",
       "failedDate": "timestamp", "heartbeat": "timestamp"}),
    t("taskSchedule", "tasks", "Index of taskExecutions: 'waiting' tasks to claim (oldest first) and 'running' ones "
      "whose heartbeat is watched; stale entries are dropped when read.", ["phase"],
      {"phase": "text", "submittedDate": "timestamp", "taskId": "uuid"}, ck=["submittedDate", "taskId"],
      options="gc_grace_seconds = 0"),
    # -- mail queue view ------------------------------------------------------------------------
    t("enqueuedMailsV4", "queue", "Browse view of each mail queue, time-sliced and bucketed.",
      ["queueName", "timeRangeStart", "bucketId"],
      {"queueName": "text", "timeRangeStart": "timestamp", "bucketId": "int", "enqueueId": "uuid",
       "enqueuedTime": "timestamp", "name": "text", "state": "text", "headerBlobId": "text", "bodyBlobId": "text",
       "attributes": "frozen<map<text, blob>>", "errorMessage": "text", "sender": "text",
       "recipients": "frozen<list<text>>", "remoteHost": "text", "remoteAddr": "text", "lastUpdated": "timestamp",
       "perRecipientSpecificHeaders": "frozen<list<tuple<text, text, text>>>"}, ck=["enqueueId"],
      options="compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'HOURS', "
              "'compaction_window_size': 1}"),
    # James: timeWindowCompactionStrategy() without a window (Cassandra's default, 1 day) and fp 0.01.
    t("deletedMailsV2", "queue", "Mails dequeued or deleted from a queue (presence = gone).",
      ["queueName", "enqueueId"], {"queueName": "text", "enqueueId": "uuid"},
      options="compaction = {'class': 'TimeWindowCompactionStrategy'} AND bloom_filter_fp_chance = 0.01"),
    t("browseStart", "queue", "First slice still holding enqueued mails, per queue.", ["queueName"],
      {"queueName": "text", "browseStart": "timestamp"}),
    t("contentStart", "queue", "First slice whose content is not yet cleaned, per queue.", ["queueName"],
      {"queueName": "text", "contentStart": "timestamp"}),
    # -- mail repositories ----------------------------------------------------------------------
    t("mailRepositoryUrls", "repository", "Known mail repository URLs.", ["url"], {"url": "text"}),
    t("mailRepositoryKeys", "repository", "Keys of the mails in each repository (size = number of keys).",
      ["name"], {"name": "text", "mailKey": "text"}, ck=["mailKey"], options="gc_grace_seconds = 0"),
    t("mailRepositoryContentV2", "repository", "Mail envelope and blob ids of each stored mail.",
      ["name", "mailKey"], {"name": "text", "mailKey": "text", "messageSize": "bigint", "state": "text",
                            "headerBlobId": "text", "bodyBlobId": "text", "attributes": "map<text, text>",
                            "errorMessage": "text", "sender": "text", "recipients": "list<text>",
                            "remoteHost": "text", "remoteAddr": "text", "lastUpdated": "timestamp",
                            "perRecipientSpecificHeaders": "list<frozen<tuple<text, text, text>>>"}),
    # -- deleted messages vault -----------------------------------------------------------------
    # James's DeletedMessageMetadataDataDefinition: key cache only, no row cache, default
    # (size-tiered) compaction; James uses no TWCS here, whole months are deleted at once.
    t("deletedMessageMetadata", "vault", "Source of truth of the vault: each deleted message's metadata (payload "
      "JSON) per month bucket and owner; a partition is what a search of that month reads.",
      ["bucketName", "owner"], {"bucketName": "text", "owner": "text", "messageId": "text", "payload": "text"},
      ck=["messageId"], options=VAULT_CACHING),
    t("storageInformation", "vault", "Index of deletedMessageMetadata: where a deleted message's content is "
      "(month bucket, blob id), by owner and message id.",
      ["owner", "messageId"], {"owner": "text", "messageId": "text", "bucketName": "text", "blobId": "text"},
      options=VAULT_CACHING),
    t("userPerBucket", "vault", "Index of deletedMessageMetadata: the users having entries in a month bucket; "
      "its partitions are the vault's buckets (written last, deleted last).", ["bucketName"],
      {"bucketName": "text", "user": "text"}, ck=["user"], options=VAULT_CACHING),
    # -- JMAP -----------------------------------------------------------------------------------
    t("uploadsV2", "jmap", "Source of truth: JMAP uploads (James's UploadDAO); the content is the blob named by "
      "blob_id in the jmap-uploads bucket.", ["user"],
      {"user": "text", "id": "timeuuid", "content_type": "text", "size": "bigint", "blob_id": "text",
       "upload_date": "timestamp"}, ck=["id"]),
    # -- administration -------------------------------------------------------------------------
    t("maintenance_mode", "admin", "Source of truth: cluster-wide maintenance switch (one row, key 'cluster').",
      ["key"], {"key": "text", "enabled": "boolean", "since": "timestamp", "reason": "text", "updated_by": "text"}),
    # -- schema version -------------------------------------------------------------------------
    t("schemaVersion", "schema", "Schema version history; the current version is the maximum value.",
      ["key"], {"key": "timeuuid", "value": "int"}, ck=["value"]),
)

TABLES_BY_NAME = {table.name.lower(): table for table in TABLES}


@dataclass
class CreationResult:
    created_tables: list[str] = field(default_factory=list)
    existing_tables: list[str] = field(default_factory=list)

    @property
    def fresh_keyspace(self) -> bool:
        """Every table was created by this run (James then writes the latest schema version)."""
        return not self.existing_tables


def create_keyspace(session: Session, config: CassandraConfig) -> None:
    """``session`` is a raw driver session (no keyspace needed)."""
    validate_identifier(config.keyspace, "keyspace name")
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {config.keyspace} "
                    f"WITH replication = {config.replication_cql()} AND durable_writes = true")


def create_schema(session: Session, config: CassandraConfig, tables: Iterable[Table] = TABLES,
                  types: Iterable[UserType] = TYPES) -> CreationResult:
    """Create the keyspace, types and tables that are missing. Never alters an existing table."""
    create_keyspace(session, config)
    ks = config.keyspace
    existing = {r[0] if isinstance(r, tuple) else r["table_name"] for r in session.execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (ks.lower(),))}
    for user_type in types:
        session.execute(user_type.create_cql(ks))
    result = CreationResult()
    for table in tables:
        if table.name.lower() in existing:
            result.existing_tables.append(table.name)
            continue
        session.execute(table.create_cql(ks))
        result.created_tables.append(table.name)
    return result


def markdown() -> str:
    """The content of docs/schema.md."""
    lines = ["# Cassandra schema", "",
             "Generated from `mailserver/cassandra/schema.py` by `python -m mailserver.cassandra.schema`;",
             "a unit test fails when this file is out of date. Names follow the James distributed",
             "server (Cassandra stores them lower-cased).", ""]
    for area in dict.fromkeys(table.area for table in TABLES):
        lines += [f"## {area}", "", "| table | partition key | clustering | columns | role |", "|---|---|---|---|---|"]
        for table in (tb for tb in TABLES if tb.area == area):
            cols = ", ".join(f"`{n}` {ty}{' static' if n in table.static else ''}" for n, ty in table.columns
                             if n not in table.partition_key and n not in dict(table.clustering))
            pk = ", ".join(f"`{c}`" for c in table.partition_key)
            ck = ", ".join(f"`{c}`{' DESC' if o == 'DESC' else ''}" for c, o in table.clustering) or "-"
            lines.append(f"| `{table.name}` | {pk} | {ck} | {cols or '-'} | {table.role} |")
        lines.append("")
    lines += ["## user types", ""]
    lines += [f"- `{ut.name}`: " + ", ".join(f"`{n}` {ty}" for n, ty in ut.fields) for ut in TYPES]
    lines += ["", "## table options", "",
              "Options given at creation (as James declares them); other tables use Cassandra's defaults.", ""]
    lines += [f"- `{table.name}`: `{table.options}`" for table in TABLES if table.options]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
