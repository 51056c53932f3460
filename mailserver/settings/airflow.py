"""The Airflow of the maintenance procedures."""

from __future__ import annotations

from datetime import timedelta

from .base import EnvironmentSettings, setting
from .values import PositiveDecimalSeconds

SECONDS = "duration (bare number: seconds, decimals allowed)"


class AirflowSettings(EnvironmentSettings):
    url: str | None = setting("MAILSERVER_AIRFLOW_URL", None, "Airflow's api-server (unset: procedures answer "
                              "503, schema upgrades run in-process).", "URL")
    username: str | None = setting("MAILSERVER_AIRFLOW_USERNAME", None, "Account the server gets its JWT with "
                                   "(required with the URL).", "text")
    password: str | None = setting("MAILSERVER_AIRFLOW_PASSWORD", None, "Its password (required with the URL).",
                                   "secret", secret=True, verbatim=True)
    poll_interval: PositiveDecimalSeconds = setting("MAILSERVER_AIRFLOW_POLL_INTERVAL", timedelta(seconds=5),
                                                    "How often a task reads its DAG run's state.", SECONDS)
    unreachable_timeout: PositiveDecimalSeconds = setting("MAILSERVER_AIRFLOW_UNREACHABLE_TIMEOUT",
                                                          timedelta(seconds=300), "How long a task tolerates "
                                                          "Airflow not answering.", SECONDS)
    http_timeout: PositiveDecimalSeconds = setting("MAILSERVER_AIRFLOW_HTTP_TIMEOUT", timedelta(seconds=30),
                                                   "One request's timeout.", SECONDS)
