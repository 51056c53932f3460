"""The event bus: its concurrency, its retries, and which listener groups this process runs."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from pydantic import BeforeValidator

from .base import EnvironmentSettings, setting
from .values import Milliseconds, Positive, Whole, comma_list


class EventSettings(EnvironmentSettings):
    bus_concurrency: Positive = setting("MAILSERVER_EVENT_BUS_CONCURRENCY", 10, "Events handled at once "
                                        "(James's listeners.xml maxConcurrency).", "integer")
    retry_max: Whole = setting("MAILSERVER_EVENT_RETRY_MAX", 8, "Retries of a failed listener before its dead "
                               "letter.", "integer")
    retry_first_backoff: Milliseconds = setting("MAILSERVER_EVENT_RETRY_FIRST_BACKOFF_MS",
                                                timedelta(milliseconds=100), "First retry's delay (doubling).",
                                                "duration (bare number: ms)")
    retry_jitter_factor: float = setting("MAILSERVER_EVENT_RETRY_JITTER_FACTOR", 0.5, "Random part of each delay, "
                                         "0 to 1.", "number")
    listener_groups: Annotated[tuple[str, ...] | None, BeforeValidator(comma_list)] = setting(
        "MAILSERVER_LISTENER_GROUPS", None, "Listener groups this process runs, by full or class name.",
        "comma list", shown_default="all")
