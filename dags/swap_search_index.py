"""Swap the search index behind James's aliases, online (the guide's "on the fly index setting update")."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, Param, task
from mailplatform.dag_defaults import dag_arguments
from mailplatform.health_gate import CASSANDRA_COMPONENTS, gated_start
from mailplatform.operators.spark_job import SparkJobOperator
from mailplatform.param_checks import form_params
from mailplatform.procedure_dag import CASSANDRA_POOL
from mailplatform.run_identity import run_identity_args

ALIAS_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,200}$"
INDEX_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,200}$"
STEPS = ["create_and_dual_write", "copy_documents", "verify"]

DOC = """
### Swap the search index (on the fly index setting update)

**Why.** Some index settings cannot change on a live index (the number of shards, analyzers, a
mapping change). The guide's "On the fly index setting update" does it without downtime: create a
new index, let the server write to both, copy the documents, then move the aliases.

**What this DAG does (one run).**
1. `check_params` checks the params' ranges; `backends_healthy` waits for Cassandra and the
   object store; `opensearch_healthy` for a cluster that is not red.
2. `plan` reads where the aliases stand: the read and write aliases must name the same single index
   (else a swap is under way: it refuses), and `new_index` must not exist.
3. `create_and_dual_write` creates `new_index` with `settings_json` (settings and/or mappings; James's
   mapping is required) or James's settings with `shards`/`replicas`, then **adds the write alias**
   to it: from now on the mail server writes every change to both indices.
4. `copy_documents`: `source=reindex` runs OpenSearch's `_reindex` from the old index as a server task
   (`op_type: create`, so documents the dual writes already put there win), throttled by
   `requests_per_second`; `source=cassandra` instead runs the `reindex_mailboxes` Spark job
   (rebuildAll) through the write alias, from Cassandra and the object store.
5. `verify` compares the new index with Cassandra (`imapUidTable`): every message must have its
   document (at most `missing_tolerance` missing), and `sample_size` sampled messages the same
   flags and modseq.
6. `switch_reads` **moves the read alias** to the new index in one atomic `_aliases` call (searches
   never see no index), removes the write alias from the old index, and records the new index as
   the current one (`mailserver_search_state`: a restarted server keeps using it, no
   `opensearch.properties` edit).
7. `drop_old_index` deletes the old index only when `drop_old_index` is true.
8. `rollback` (teardown) runs whatever happens: if the swap did not complete, the aliases are put
   back as `plan` found them (the new index is detached from both and kept for inspection; the
   recorded index is restored). `search_healthy_after` checks the cluster at the end.

**How to run it.** Safe with traffic on. Messages changed during the copy are written to both
indices; a message deleted while `_reindex` runs may come back as an orphan in the new index: run
`reindex_mailboxes` with `mode=fixOutdated` after the swap. `fail_after` makes the run fail after
a step on purpose (a rehearsal of the rollback).
"""

PARAMS, FORM_RULES = form_params({
    "new_index": Param("mailbox_v2", type="string", pattern=INDEX_PATTERN,
                       description="Name of the new index (lower case, must not exist)"),
    "settings_json": Param(None, type=["null", "object"],
                           properties={"settings": {"type": "object"}, "mappings": {"type": "object"}},
                           additionalProperties=False,
                           description="Index body: settings and/or mappings (empty: James's, with shards)"),
    "shards": Param(5, type="integer", minimum=1, maximum=1024, description="Primary shards of the new index"),
    "replicas": Param(1, type="integer", minimum=0, maximum=16, description="Replicas of the new index"),
    "source": Param("reindex", type="string", enum=["reindex", "cassandra"],
                    description="reindex: OpenSearch _reindex from the old index; cassandra: rebuild from "
                                "Cassandra and the object store (Spark)"),
    "requests_per_second": Param(None, type=["null", "number"], exclusiveMinimum=0,
                                 description="_reindex throttle (documents per second; empty: none)"),
    "read_alias": Param("mailboxReadAlias", type="string", pattern=ALIAS_PATTERN, description="Read alias"),
    "write_alias": Param("mailboxWriteAlias", type="string", pattern=ALIAS_PATTERN, description="Write alias"),
    "state_index": Param("mailserver_search_state", type="string", pattern=INDEX_PATTERN,
                         description="Where the current index is recorded"),
    "sample_size": Param(200, type="integer", minimum=0, maximum=100000,
                         description="Messages whose flags are compared between Cassandra and the new index"),
    "missing_tolerance": Param(0, type="integer", minimum=0,
                               description="Messages that may be missing from the new index"),
    "drop_old_index": Param(False, type="boolean", description="Delete the old index after the swap"),
    "blob_bucket": Param(None, type=["null", "string"], pattern="^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$",
                         description="Bucket of the message blobs (source=cassandra; empty: the default)"),
    "fail_after": Param(None, type=["null", "string"], enum=[None, *STEPS],
                        description="Rehearsal: fail on purpose after this step (the rollback runs)"),
})

with DAG(
    dag_id="swap_search_index",
    description="Move James's search aliases to a new index (new shards, settings or mapping) online, "
                "with rollback",
    doc_md=DOC,
    schedule=None,
    tags=["maintenance", "search", "opensearch"],
    **dag_arguments(retry_delay=timedelta(seconds=30)),
    params=PARAMS,
) as dag:
    # Not procedure_dag's shape: OpenSearch steps around an optional Spark rebuild (a branch), a rollback
    # teardown instead of a report, and a DAG-wide retry delay of 30 s.
    healthy = gated_start(FORM_RULES, components=CASSANDRA_COMPONENTS)

    def _cluster_not_red() -> bool:
        from mailplatform.search_index import client_from_connection

        try:
            return client_from_connection().cluster.health()["status"] in ("green", "yellow")
        except Exception:   # unreachable: not healthy yet
            return False

    @task.sensor(poke_interval=10, timeout=15 * 60, mode="reschedule")
    def opensearch_healthy() -> bool:
        return _cluster_not_red()

    # After the rollback, whatever it did; skipped with it when nothing was created (a refused param).
    @task.sensor(poke_interval=10, timeout=15 * 60, mode="reschedule", trigger_rule="one_done")
    def search_healthy_after() -> bool:
        return _cluster_not_red()

    def _fail_if_asked(step: str, params: dict[str, Any]) -> None:
        from mailplatform.search_index import SwapError

        if params.get("fail_after") == step:
            raise SwapError(f"fail_after={step}: failing on purpose (rehearsal of the rollback)")

    @task
    def plan(**context: Any) -> dict[str, Any]:
        from mailplatform.search_index import client_from_connection, index_definition, plan_swap

        p = context["params"]
        index_definition(p["settings_json"], p["shards"], p["replicas"])   # refused before anything changes
        return plan_swap(client_from_connection(), p["new_index"], read_alias=p["read_alias"],
                         write_alias=p["write_alias"], state_index=p["state_index"]).to_json()

    @task
    def create_and_dual_write(swap: dict[str, Any], **context: Any) -> None:
        from mailplatform.search_index import SwapPlan, client_from_connection, create_and_dual_write, index_definition

        p = context["params"]
        create_and_dual_write(client_from_connection(), SwapPlan.from_json(swap),
                              index_definition(p["settings_json"], p["shards"], p["replicas"]))
        _fail_if_asked("create_and_dual_write", p)

    @task.branch
    def copy_source(**context: Any) -> str:
        return "copy_with_reindex_api" if context["params"]["source"] == "reindex" else "rebuild_from_cassandra"

    @task
    def copy_with_reindex_api(swap: dict[str, Any], **context: Any) -> dict[str, Any]:
        from mailplatform.search_index import SwapPlan, client_from_connection, copy_with_reindex_api

        p = context["params"]
        result = copy_with_reindex_api(client_from_connection(), SwapPlan.from_json(swap),
                                       requests_per_second=p["requests_per_second"])
        _fail_if_asked("copy_documents", p)
        return result

    def rebuild_args(context: Any) -> list[str]:
        p = context["params"]
        args = [*run_identity_args(context), "--mode", "rebuildAll", "--read-alias", p["read_alias"],
                "--write-alias", p["write_alias"], "--slices", "8"]
        if p.get("blob_bucket"):
            args += ["--blob-bucket", p["blob_bucket"]]
        return args

    rebuild = SparkJobOperator(task_id="rebuild_from_cassandra", job="reindex_mailboxes",
                               args_from_context=rebuild_args, pool=CASSANDRA_POOL)

    @task(pool=CASSANDRA_POOL, trigger_rule="none_failed_min_one_success")
    def verify(swap: dict[str, Any], **context: Any) -> dict[str, Any]:
        import random

        from mailplatform.hooks.cassandra import CassandraHook
        from mailplatform.search_index import SwapPlan, client_from_connection, verify

        from spark_apps.common.search_reindex import row_flags, signature

        p = context["params"]
        ids, rows = [], []
        with CassandraHook().session() as session:
            for row in session.execute("SELECT * FROM imapuidtable"):
                record = row._asdict()
                ids.append(f"{record['mailboxid']}:{record['uid']}")
                rows.append(record)
        sample = {f"{r['mailboxid']}:{r['uid']}": signature(row_flags(r), r["modseq"])
                  for r in random.sample(rows, min(p["sample_size"], len(rows)))}
        result = verify(client_from_connection(), SwapPlan.from_json(swap), ids, sample,
                        tolerance=p["missing_tolerance"])
        _fail_if_asked("verify", p)
        return result

    @task
    def switch_reads(swap: dict[str, Any]) -> dict[str, Any]:
        from mailplatform.search_index import SwapPlan, client_from_connection, switch_reads

        switch_reads(client_from_connection(), SwapPlan.from_json(swap))
        return {"readAlias": swap["read_alias"], "index": swap["new_index"], "previousIndex": swap["old_index"]}

    @task
    def drop_old_index(swap: dict[str, Any], **context: Any) -> bool:
        from mailplatform.search_index import client_from_connection

        from mailserver.search.index import drop_index

        if not context["params"]["drop_old_index"]:
            return False
        return drop_index(client_from_connection(), swap["old_index"], protected_aliases=(swap["read_alias"],))

    @task(trigger_rule="all_done")
    def rollback(**context: Any) -> dict[str, Any]:
        """Teardown: the swap completed when ``switch_reads`` returned; otherwise the aliases go back."""
        from mailplatform.search_index import SwapPlan, client_from_connection, rollback

        swap = context["ti"].xcom_pull(task_ids="plan")
        if swap is None:
            return {"rolledBack": False, "reason": "nothing was changed (plan did not finish)"}
        if context["ti"].xcom_pull(task_ids="switch_reads"):
            return {"rolledBack": False}
        return {"rolledBack": True, "actions": rollback(client_from_connection(), SwapPlan.from_json(swap))}

    swap = plan()
    created = create_and_dual_write(swap)
    branch = copy_source()
    copied = copy_with_reindex_api(swap)
    checked = verify(swap)
    switched = switch_reads(swap)
    dropped = drop_old_index(swap)
    undo = rollback()
    healthy >> opensearch_healthy() >> swap >> created >> branch >> [copied, rebuild]
    [copied, rebuild] >> checked >> switched >> dropped >> undo.as_teardown(setups=created)
    undo >> search_healthy_after()
