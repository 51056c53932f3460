"""What every DAG of the platform shares: its owner (the team), retries, and failure alerts.

``MAILPLATFORM_OWNER`` (default ``mail-ops``) names the team shown as the DAGs' owner. Alerts go
through ``notifiers.PlatformAlertNotifier``: a task that failed with no retry left (``task_failed``)
and a failed run (``run_failed``).
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from mailplatform.notifiers import PlatformAlertNotifier

OWNER_ENV = "MAILPLATFORM_OWNER"
DEFAULT_OWNER = "mail-ops"


def owner() -> str:
    return os.environ.get(OWNER_ENV, "").strip() or DEFAULT_OWNER


def default_args(retry_delay: timedelta = timedelta(minutes=1), retries: int = 1) -> dict[str, Any]:
    return {"owner": owner(), "retries": retries, "retry_delay": retry_delay,
            "on_failure_callback": [PlatformAlertNotifier("task_failed")]}


def dag_arguments(retry_delay: timedelta = timedelta(minutes=1)) -> dict[str, Any]:
    """Keyword arguments of ``DAG(...)`` common to every DAG (catch-up is off everywhere)."""
    return {"catchup": False, "max_active_runs": 1, "default_args": default_args(retry_delay),
            "on_failure_callback": [PlatformAlertNotifier("run_failed")]}
