"""Which run a Spark job belongs to: its run key (checkpoints, report) and the audit fields of the run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def run_key(context: Mapping[str, Any]) -> str:
    return f"{context['dag'].dag_id}/{context['run_id']}"


def run_identity_args(context: Mapping[str, Any], key: str | None = None) -> list[str]:
    """Which run this is and who asked for it: the job's run key (checkpoints, report; the DAG run's
    unless ``key`` says otherwise) and audit fields."""
    dag_run = context.get("dag_run")
    who = getattr(dag_run, "triggering_user_name", None) or "scheduler"
    return ["--run-key", key or run_key(context), "--dag-id", context["dag"].dag_id, "--dag-run-id", context["run_id"],
            "--triggered-by", who]
