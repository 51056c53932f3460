"""The steps of the search-index swap (the guide's "on the fly index setting update"), as functions of an
OpenSearch client so the DAG's tasks stay thin and the steps are testable on their own.

State between steps is a small ``SwapPlan`` (JSON in XCom): the aliases, the index they named before
the run, the new index. ``rollback`` puts the aliases back exactly as the plan found them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

log = logging.getLogger(__name__)

OPENSEARCH_CONN_ID = "opensearch_default"
BODY_KEYS = frozenset({"settings", "mappings"})


class SwapError(AirflowFailException):
    """A step refused to go on: no retry, the rollback teardown restores the aliases."""


@dataclass(frozen=True)
class SwapPlan:
    read_alias: str
    write_alias: str
    state_index: str
    old_index: str
    new_index: str
    read_before: list[str] = field(default_factory=list)
    write_before: list[str] = field(default_factory=list)
    recorded_before: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SwapPlan:
        return cls(**dict(data))


def client_from_connection(conn_id: str = OPENSEARCH_CONN_ID) -> Any:
    from airflow.sdk.bases.hook import BaseHook

    from mailserver.search.config import SearchConfig
    from mailserver.search.index import make_client

    conn = BaseHook.get_connection(conn_id)
    url = f"{conn.schema or 'http'}://{conn.host}:{conn.port or 9200}"
    return make_client(SearchConfig(urls=(url,), timeout=120.0), max_retries=3)


def index_definition(body: Mapping[str, Any] | None, shards: int | None, replicas: int | None) -> dict[str, Any]:
    """The new index's settings and mapping: ``body`` as given (only settings/mappings), else James's with
    ``shards``/``replicas``. James's mapping is required: documents are written by the server's code."""
    from mailserver.search.mapping import MAILBOX_MAPPING, index_body

    if body is None:
        return index_body(shards or 5, 1 if replicas is None else replicas)
    unknown = set(body) - BODY_KEYS
    if unknown:
        raise SwapError(f"settings JSON: unknown keys {sorted(unknown)} (allowed: settings, mappings)")
    definition = index_body(shards or 5, 1 if replicas is None else replicas)
    if "settings" in body:
        settings = dict(body["settings"])
        definition["settings"] = {**definition["settings"], **settings}
    if "mappings" in body:
        mappings = body["mappings"]
        missing = set(MAILBOX_MAPPING["properties"]) - set((mappings or {}).get("properties", {}))
        if missing:
            raise SwapError(f"settings JSON: the mapping lacks fields the server writes: {sorted(missing)[:10]}")
        definition["mappings"] = mappings
    return definition


def plan_swap(client: Any, new_index: str, *, read_alias: str, write_alias: str, state_index: str) -> SwapPlan:
    """Where the aliases stand; refuses a swap already under way or a target that exists."""
    from mailserver.search.config import check_index_name
    from mailserver.search.index import alias_indices, recorded_index

    check_index_name(new_index, "new_index")
    read_before, write_before = alias_indices(client, read_alias), alias_indices(client, write_alias)
    if len(read_before) != 1:
        raise SwapError(f"the read alias {read_alias} names {read_before or 'no index'}: expected exactly one")
    if write_before != read_before:
        raise SwapError(f"the write alias {write_alias} names {write_before}, the read alias {read_before}: "
                        "a swap is under way or was left half done; fix the aliases first")
    if client.indices.exists(index=new_index):
        raise SwapError(f"index {new_index} already exists: choose a new name")
    return SwapPlan(read_alias, write_alias, state_index, read_before[0], new_index, read_before, write_before,
                    recorded_index(client, read_alias=read_alias, state_index=state_index))


def create_and_dual_write(client: Any, plan: SwapPlan, definition: Mapping[str, Any]) -> None:
    from mailserver.search.index import add_alias, create_index

    # plan_swap saw no such index: if it exists now, a first attempt of this step created it (retry)
    create_index(client, plan.new_index, dict(definition))
    add_alias(client, plan.new_index, plan.write_alias)   # new writes now go to both indices


def copy_with_reindex_api(client: Any, plan: SwapPlan, *, requests_per_second: float | None = None,
                          poll_seconds: float = 2.0, timeout_seconds: float = 6 * 3600) -> dict[str, Any]:
    """``_reindex`` old -> new as a server task, polled, twice. ``op_type: create``: a document the dual
    writes already put in the new index is newer and stays (a conflict, counted, not an error).

    The second pass catches up what a writer put in the old index only: one that had looked up the
    write alias's indices before the new index joined it and wrote after the first pass's snapshot."""
    first = _reindex_pass(client, plan, requests_per_second, poll_seconds, timeout_seconds)
    catch_up = _reindex_pass(client, plan, requests_per_second, poll_seconds, timeout_seconds)
    return {**first, "created": (first.get("created") or 0) + (catch_up.get("created") or 0),
            "catchUpCreated": catch_up.get("created") or 0}


def _reindex_pass(client: Any, plan: SwapPlan, requests_per_second: float | None, poll_seconds: float,
                  timeout_seconds: float) -> dict[str, Any]:
    body = {"source": {"index": plan.old_index, "size": 1000},
            "dest": {"index": plan.new_index, "op_type": "create"}, "conflicts": "proceed"}
    params: dict[str, Any] = {"wait_for_completion": "false", "refresh": "true"}
    if requests_per_second:
        params["requests_per_second"] = str(requests_per_second)
    task_id = client.reindex(body=body, params=params)["task"]
    deadline = time.monotonic() + timeout_seconds
    while True:
        status = client.tasks.get(task_id=task_id)
        if status.get("completed"):
            response = status.get("response", {})
            failures = response.get("failures") or []
            if status.get("error") or failures:
                raise SwapError(f"_reindex failed: {status.get('error') or failures[:5]}")
            log.info("_reindex %s -> %s: %s", plan.old_index, plan.new_index,
                     {k: response.get(k) for k in ("total", "created", "version_conflicts")})
            return {k: response.get(k) for k in ("total", "created", "version_conflicts", "took")}
        if time.monotonic() > deadline:
            client.tasks.cancel(task_id=task_id)
            raise SwapError(f"_reindex did not finish within {timeout_seconds}s (cancelled)")
        time.sleep(poll_seconds)


def verify(client: Any, plan: SwapPlan, truth_ids: Iterable[str], sample: Mapping[str, str],
           *, tolerance: int = 0, settle_seconds: float = 30.0, poll_seconds: float = 2.0) -> dict[str, Any]:
    """The new index holds every message of Cassandra (``truth_ids``: ``<mailboxId>:<uid>``) and the sampled
    ones with the same flags (``sample``: id -> signature); at most ``tolerance`` missing.

    Mail keeps flowing during a swap, and a message is in Cassandra before its indexing (the listener,
    through the write alias) is done: what is missing or differs at first is read again for up to
    ``settle_seconds`` before it counts."""
    from opensearchpy import helpers

    from spark_apps.common.search_reindex import COMPARED_FIELDS, document_signature

    client.indices.refresh(index=plan.new_index)
    indexed = {hit["_id"]: hit["_source"] for hit in helpers.scan(
        client, index=plan.new_index, query={"query": {"match_all": {}}}, _source=COMPARED_FIELDS, size=2000)}
    truth = set(truth_ids)

    def problems() -> tuple[list[str], list[str]]:
        missing = sorted(truth - set(indexed))
        wrong = sorted(i for i, sig in sample.items() if i in indexed and document_signature(indexed[i]) != sig)
        return missing, wrong

    missing, wrong = problems()
    deadline = time.monotonic() + settle_seconds
    while (missing or wrong) and time.monotonic() < deadline:
        time.sleep(poll_seconds)
        client.indices.refresh(index=plan.new_index)
        again = [*missing, *wrong]
        # an ids query, not mget: documents are routed by mailbox, mget would need each routing
        hits = client.search(index=plan.new_index, body={"query": {"ids": {"values": again}}, "size": len(again),
                                                          "_source": list(COMPARED_FIELDS)})["hits"]["hits"]
        indexed.update({hit["_id"]: hit["_source"] for hit in hits})
        missing, wrong = problems()
    old_count = client.count(index=plan.old_index)["count"]
    result = {"messages": len(truth), "newIndexDocuments": len(indexed), "oldIndexDocuments": old_count,
              "missing": len(missing), "missingSample": missing[:20], "sampled": len(sample),
              "sampleMismatches": wrong[:20]}
    if len(missing) > tolerance or wrong:
        raise SwapError(f"verification failed: {result}")
    return result


def switch_reads(client: Any, plan: SwapPlan) -> None:
    from mailserver.search.index import alias_indices, move_alias, record_current_index, remove_alias

    move_alias(client, plan.read_alias, plan.new_index)          # atomic: reads never see no index
    if plan.old_index in alias_indices(client, plan.write_alias):   # idempotent: a retry finds it removed
        remove_alias(client, plan.old_index, plan.write_alias)
    record_current_index(client, plan.new_index, read_alias=plan.read_alias, write_alias=plan.write_alias,
                         state_index=plan.state_index)


def rollback(client: Any, plan: SwapPlan) -> list[dict[str, Any]]:
    """Aliases exactly as before the run, in one atomic ``_aliases`` call; the new index is detached and kept
    (for inspection; delete it by hand). The recorded index is put back if the run had changed it."""
    from mailserver.search.index import alias_indices, record_current_index, recorded_index

    actions: list[dict[str, Any]] = []
    for alias, before in ((plan.read_alias, plan.read_before), (plan.write_alias, plan.write_before)):
        now = alias_indices(client, alias)
        actions += [{"remove": {"index": i, "alias": alias}} for i in now if i not in before]
        actions += [{"add": {"index": i, "alias": alias}} for i in before if i not in now]
    if actions:
        client.indices.update_aliases(body={"actions": actions})
    if plan.recorded_before is not None and recorded_index(
            client, read_alias=plan.read_alias, state_index=plan.state_index) != plan.recorded_before:
        record_current_index(client, plan.recorded_before, read_alias=plan.read_alias,
                             write_alias=plan.write_alias, state_index=plan.state_index)
    log.warning("swap to %s rolled back: %s", plan.new_index, actions or "aliases were unchanged")
    return actions
