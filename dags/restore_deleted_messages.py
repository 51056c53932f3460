"""Restore a user's deleted messages matching James's vault query, in Spark (James's deleted-messages-restore)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from airflow.sdk import Param
from mailplatform.live import user_exists
from mailplatform.mail_queues import MailQueueSparkJob
from mailplatform.param_checks import ParamError, from_value_error
from mailplatform.procedure_dag import SparkProcedure, procedure_dag
from mailplatform.procedures import COMMON_PARAMS, common_args

DAG_ID = "restore_deleted_messages"
JOB = "restore_deleted_messages"
TASK_TYPE = "deleted-messages-restore"
BUCKET_PATTERN = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"

DOC = """
### Restore deleted messages from the vault

**What it is for.** With `MAILSERVER_VAULT_ENABLED`, every message a user definitively deletes
is kept in the deleted-messages vault (content in S3, metadata in James's tables). WebAdmin
restores from it (`POST /deletedMessages/users/{user}?action=restore`, James's task
`deleted-messages-restore`) in one server process. This DAG does the same restore in Spark,
for restores too large for one process (a user who emptied years of mail), resumable and
throttled.

**Params.** `user`, and `query`: exactly the JSON body the WebAdmin restore route takes
(James's criteria: `deletionDate` / `deliveryDate` `beforeOrEquals` / `afterOrEquals`,
`recipients contains`, `sender equals`, `hasAttachment equals`, `originMailboxes contains`,
`subject equals|equalsIgnoreCase|contains|containsIgnoreCase`, combined with `and`, optional
`limit`), e.g. `{"combinator": "and", "criteria": [{"fieldName": "subject", "operator":
"contains", "value": "invoice"}]}`; `{"criteria": []}` restores everything. `restore_location`
is the server's `MAILSERVER_VAULT_RESTORE_LOCATION` (empty: `Restored-Messages`).

**What this DAG does.**
1. `check_params` parses the query with the vault's own parser and checks that the user exists:
   a bad query or user fails the run before anything else runs (a retry cannot fix params).
2. `backends_healthy` waits for WebAdmin's Cassandra and ObjectStorage checks.
3. `restore` (Spark, `cassandra_maintenance` pool) lists the user's vault entries matching the
   query, and appends each one's content to the restore mailbox (created and subscribed when
   missing) through the server's mailbox manager, with its delivery date as internal date; the
   server's listeners (quota, search) see the events as for any append. `rate` bounds the
   messages restored per second; `slices` are checkpointed.
4. `report` shows James's `successfulRestoreCount` and `errorRestoreCount`, with the entries
   matched, skipped as already restored, and skipped because their content is gone (as James
   does); the full report is in S3, the run in `maintenance_audit`.

**How to run it.** `dry_run` first: it counts and lists the entries that would be restored and
writes nothing. The vault keeps its entries (restoring is not deleting). Safe to re-run and to
retry: each restored copy's message id is derived from the user and the vault message id, so an
entry is never appended twice: a run killed midway and started again restores only the rest, and
a second run of the same query restores nothing new. Give `bucket_prefix` / `blob_bucket` when
the server runs with `S3_BUCKET_PREFIX` / `S3_DEFAULT_BUCKET`.
"""


def validate_params(params: Mapping[str, Any]) -> None:
    """The user and the query as the server would take them; a ValueError says what is wrong."""
    from mailserver.model.address import Username
    from mailserver.vault.query import Query

    if not params.get("user"):
        raise ParamError("user", "missing: give the user whose deleted messages are restored")
    try:
        Username.of(params["user"])
    except ValueError as exc:
        raise ParamError("user", str(exc)) from None
    if params.get("query") is None:
        raise ParamError("query", 'missing: give James\'s JSON query ({"criteria": []} restores everything)')
    try:
        Query.parse(params["query"])
    except ValueError as exc:
        raise ParamError("query", str(exc)) from None


def job_args(params: Mapping[str, Any]) -> list[str]:
    """The Spark job's restore options for these (validated) params."""
    args = ["--user", params["user"], "--query", json.dumps(params["query"], separators=(",", ":"))]
    for name, option in (("restore_location", "--restore-location"), ("bucket_prefix", "--bucket-prefix"),
                         ("blob_bucket", "--blob-bucket")):
        if params.get(name):
            args += [option, params[name]]
    return args


def spark_args(context: Mapping[str, Any]) -> list[str]:
    return [*common_args(context), *job_args(context["params"])]


def restored(report: Mapping[str, Any]) -> list[str]:
    return [f"{report.get('username')}: {report.get('matchingEntries', 0)} matching, "
            f"{report.get('successfulRestoreCount', 0)} restored, {report.get('errorRestoreCount', 0)} failed, "
            f"{report.get('skippedAlreadyRestored', 0) + report.get('alreadyRestoredEntries', 0)} already "
            f"restored, {report.get('skippedContentNotFound', 0)} without content"]


dag = procedure_dag(SparkProcedure(
    dag_id=DAG_ID,
    description="Deleted messages vault: restore a user's messages matching a query (James's restore task)",
    doc_md=DOC,
    tags=("maintenance", "cassandra", "vault", "s3", "restore"),
    params={
        **COMMON_PARAMS,
        "user": Param(None, type=["null", "string"], pattern=r"^[^\s/@]+(@[^\s/@]+)?$",
                      description="The user whose deleted messages are restored"),
        "query": Param(None, type=["null", "object"],
                       description="James's vault query, the WebAdmin restore route's JSON body "
                                   '(e.g. {"combinator": "and", "criteria": [{"fieldName": "subject", '
                                   '"operator": "contains", "value": "invoice"}]})'),
        "restore_location": Param(None, type=["null", "string"], minLength=1,
                                  description="Restore mailbox (the server's MAILSERVER_VAULT_RESTORE_LOCATION; "
                                              "empty: Restored-Messages)"),
        "bucket_prefix": Param("", type="string", pattern=r"^[a-z0-9.-]*$",
                               description="The server's S3_BUCKET_PREFIX (empty when it has none)"),
        "blob_bucket": Param(None, type=["null", "string"], pattern=BUCKET_PATTERN,
                             description="The server's mail bucket, S3_DEFAULT_BUCKET (empty: the default)"),
    },
    checks=(from_value_error(validate_params),),
    live_checks=(user_exists("user"),),
    # The operator of the mail-queue DAGs: the whole server package with the job (the executors append
    # through its mailbox manager) and the broker of its events (AMQP_URL, from the connection).
    operator=MailQueueSparkJob,
    job=JOB,
    job_task_id="restore",
    job_args=spark_args,
    report_type=TASK_TYPE,
    report_lines=restored,
))
