"""Reindex the OpenSearch mailbox index from Cassandra and the object store (James's ReIndexing tasks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import Param
from mailplatform.live import mailboxes_exist, user_exists
from mailplatform.param_checks import only_with
from mailplatform.procedures import Procedure, repair_dag

ALIAS_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,200}$"
DAG_ID = "reindex_mailboxes"
RUN_ID_PATTERN = r"^[A-Za-z0-9_.:+~-]{1,250}$"

DOC = """
### Reindex mailboxes (OpenSearch)

**Why it happens.** The search index is a projection of the messages, kept by the indexing listener
of the event bus. A listener that keeps failing (OpenSearch down, a dead letter never redelivered),
a restored or lost index, or an index built with other settings leave it out of date: messages
missing from searches, a flag search (unread, flagged) that disagrees with the client, documents of
deleted messages still found. The guide's "ElasticSearch Indexing": *you can reindex from
Cassandra, the source of truth*, with `mode=rebuildAll` (reindex everything) or `mode=fixOutdated`
(only what differs).

**Symptoms.** IMAP/JMAP searches missing recent mail or finding deleted mail; event dead letters of
the group `OpenSearchListeningMessageSearchIndex$OpenSearchListeningMessageSearchIndexGroup`;
the `OpenSearch Backend` health check failing for a while.

**What this DAG does.**
1. `backends_healthy` waits for Cassandra and the object store to be healthy.
2. `detect_repair_verify` (Spark, `cassandra_maintenance` pool) reads the messages in scope from
   `imapUidTable` (the truth) and the documents through the read alias (ids, flags, modseq only),
   and compares them: `missingDocument` (indexed), `outdatedDocument` (flags or modseq differ:
   rewritten), `orphanDocument` (message no longer in Cassandra: deleted). In `rebuildAll` every
   message in scope is indexed again. Documents are built on the executors from the message content
   in the object store with the server's own code, and written in batches through the write alias
   (both indices during an alias swap). Then the comparison runs again: nothing may differ.
3. `report` shows the counters (`processedMessageCount`, `indexedMessageCount`,
   `fixedMessageCount`, `deletedDocumentCount`, `failedMessageCount`) and `messageFailures`
   (mailbox id -> uids) to rerun; the run fails when a message failed.

**How to run it.** Safe with traffic on (the listener keeps indexing new mail). Start with `dry_run`
to see what differs. Scope: everything, `user`, `mailbox_id`, one message (`mailbox_id` + `uid`), or `failures_of`: the
run id of a previous run of this DAG, whose report's `messageFailures` (those messages) and
`mailboxFailures` (those whole mailboxes) are reindexed (James's `reIndexFailedMessagesOf`, the task
type `error-recovery-indexation`; WebAdmin's `POST /mailboxes?task=reIndex&reIndexFailedMessagesOf=`
sends the run of the task named).
`messages_per_second` bounds the load on the object store and OpenSearch (James's
`messagesPerSecond`). A failed run is rerun as is: it resumes from its checkpoints, and
`fixOutdated` only touches what still differs.
"""


def job_args(params: Mapping[str, Any]) -> list[str]:
    args = ["--mode", params["mode"]]
    if params.get("failures_of"):
        args += ["--failures-of", f"{DAG_ID}/{params['failures_of']}"]   # that run's key: its report
    for name, flag in (("user", "--user"), ("mailbox_id", "--mailbox-id"), ("uid", "--uid"),
                       ("messages_per_second", "--messages-per-second"), ("blob_bucket", "--blob-bucket"),
                       ("read_alias", "--read-alias"), ("write_alias", "--write-alias")):
        if params.get(name) is not None and params.get(name) != "":
            args += [flag, str(params[name])]
    return args


dag = repair_dag(Procedure(
    dag_id=DAG_ID,
    job="reindex_mailboxes",
    task_type="full-reindexing",
    description="OpenSearch mailbox index rebuilt or fixed from Cassandra and the object store "
                "(James's reIndex tasks)",
    doc_md=DOC,
    tags=("search", "opensearch", "reindex"),
    params={
        "mode": Param("fixOutdated", type="string", enum=["rebuildAll", "fixOutdated"],
                      description="rebuildAll: index every message in scope; fixOutdated: only what differs"),
        "user": Param(None, type=["null", "string"], format="idn-email",
                      description="Only this user's mailboxes (empty: every mailbox)"),
        "mailbox_id": Param(None, type=["null", "string"],
                            pattern="^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
                            description="Only this mailbox (its id)"),
        "uid": Param(None, type=["null", "integer"], minimum=1,
                     description="Only this message of mailbox_id"),
        "failures_of": Param(None, type=["null", "string"], pattern=RUN_ID_PATTERN,
                             description="Run id of a previous run: reindex only its messageFailures and "
                                         "mailboxFailures (empty: the scope above)"),
        "messages_per_second": Param(50, type=["null", "number"], exclusiveMinimum=0,
                                     description="Messages reindexed per second (James's messagesPerSecond)"),
        "blob_bucket": Param(None, type=["null", "string"], pattern="^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$",
                             description="Bucket of the message blobs (empty: the server's default bucket)"),
        "read_alias": Param(None, type=["null", "string"], pattern=ALIAS_PATTERN,
                            description="Read alias (empty: mailboxReadAlias)"),
        "write_alias": Param(None, type=["null", "string"], pattern=ALIAS_PATTERN,
                             description="Write alias (empty: mailboxWriteAlias)"),
    },
    args_from_params=job_args,
    checks=(only_with("uid", "mailbox_id"),),
    live_checks=(user_exists("user"), mailboxes_exist("mailbox_id")),
))
