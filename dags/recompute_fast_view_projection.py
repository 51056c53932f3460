"""Recompute the JMAP message fast-view projection (preview and hasAttachment per message)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import Param
from mailplatform.live import user_exists
from mailplatform.procedures import Procedure, repair_dag

DOC = """
### Recompute the JMAP message fast-view projection

**Why it happens.** When a JMAP client lists messages it expects `preview` and `hasAttachment`
to come fast. They are computed once, when a message arrives, by an event-bus listener and
cached in `message_fast_view_projection`. If that write fails, the row is missing: JMAP
computes it again on every read (the content is fetched from the object store), which is slow.

**Symptoms.** The `MessageFastViewProjection` health check degraded for a while (too many
cache misses), slow JMAP `Email/get` of lists. The cache heals itself on reads, so run this
only when the health check stays degraded, or after restoring a keyspace.

**What this DAG does.**
1. `backends_healthy` waits for Cassandra and the object store to be healthy.
2. `detect_repair_verify` (Spark) lists the messages of the users' personal mailboxes and finds
   those without a projection row (`mode=missing`), or takes them all (`mode=rebuild-all`, what
   James's task does). For each, it reads the message header and the start of its body from the
   object store and computes the preview and hasAttachment with the mail server's own code, then
   writes the row. Nothing is deleted. Detection then runs again: no row may be missing.
3. `report` shows James's counters (`processedUserCount`, `processedMessageCount`,
   `failedUserCount`, `failedMessageCount`).

**How to run it.** Safe with traffic on. Start with `dry_run` to see how many rows are missing.
`user` limits it to one user (James's per-user task); `rate` bounds the messages per second
(James's `messagesPerSecond`, default 10: each message is read from the object store);
`blob_bucket` is the mail bucket when it is not the server's default (`S3_DEFAULT_BUCKET`).
"""


def job_args(params: Mapping[str, Any]) -> list[str]:
    args = ["--mode", params["mode"]]
    if params.get("user"):
        args += ["--user", params["user"]]
    if params.get("blob_bucket"):
        args += ["--blob-bucket", params["blob_bucket"]]
    return args


dag = repair_dag(Procedure(
    dag_id="recompute_fast_view_projection",
    job="recompute_fast_view_projection",
    task_type="RecomputeAllFastViewProjectionItemsTask",
    description="message_fast_view_projection recomputed from the message contents "
                "(James's recomputeFastViewProjectionItems)",
    doc_md=DOC,
    tags=("inconsistencies", "jmap", "fast-view"),
    params={
        "mode": Param("missing", type="string", enum=["missing", "rebuild-all"],
                      description="missing: only messages without a row; rebuild-all: every message"),
        "user": Param(None, type=["null", "string"], format="idn-email",
                      description="Only this user's messages (empty: every user)"),
        "blob_bucket": Param(None, type=["null", "string"], pattern="^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$",
                             description="Bucket of the message blobs (empty: the server's default bucket)"),
    },
    args_from_params=job_args,
    live_checks=(user_exists("user"),),
))
