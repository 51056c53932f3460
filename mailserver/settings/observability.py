"""Logging: the format of the lines and the level of each logger."""

from __future__ import annotations

from typing import Annotated

from .base import EnvironmentSettings, setting
from .values import one_of


class LoggingSettings(EnvironmentSettings):
    log_format: Annotated[str, one_of("console", "json")] = setting("MAILSERVER_LOG_FORMAT", "console", "Format "
                                                                    "of the log lines.", "one of console, json")
    log_levels: str = setting("MAILSERVER_LOG_LEVELS", "", "Levels per logger, e.g. `root=DEBUG,cassandra=INFO` "
                              "(root INFO, the drivers WARNING).", "logger=LEVEL,...")
