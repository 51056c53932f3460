"""The task worker of each node (the node's name: MAILSERVER_NODE_NAME, in the node's settings)."""

from __future__ import annotations

from datetime import timedelta

from .base import EnvironmentSettings, setting
from .values import DecimalSeconds, Positive

SECONDS = "duration (bare number: seconds, decimals allowed)"


class TaskSettings(EnvironmentSettings):
    poll_interval: DecimalSeconds = setting("MAILSERVER_TASKS_POLL_INTERVAL", timedelta(seconds=1), "How often "
                                            "the worker looks for waiting tasks.", SECONDS)
    heartbeat_interval: DecimalSeconds = setting("MAILSERVER_TASKS_HEARTBEAT_INTERVAL", timedelta(seconds=2),
                                                 "How often a running task's worker says it lives.", SECONDS)
    heartbeat_timeout: DecimalSeconds = setting("MAILSERVER_TASKS_HEARTBEAT_TIMEOUT", timedelta(seconds=60), "A "
                                                "running task whose worker stayed silent this long is failed.",
                                                SECONDS)
    parallelism: Positive = setting("MAILSERVER_TASKS_PARALLELISM", 1, "Tasks run at once by this node.", "integer")
