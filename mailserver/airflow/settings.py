"""Where the Airflow of the maintenance procedures is, from the environment (secrets never on a command line).

* ``MAILSERVER_AIRFLOW_URL``: the api-server, e.g. ``http://127.0.0.1:8080``; unset or empty:
  Airflow is not configured (the procedure routes answer 503, schema upgrades run in-process);
* ``MAILSERVER_AIRFLOW_USERNAME`` / ``MAILSERVER_AIRFLOW_PASSWORD``: the account the mail
  server obtains its JWT with (``POST /auth/token``); both required when the URL is set;
* ``MAILSERVER_AIRFLOW_POLL_INTERVAL`` (s, default 5): how often a task reads its DAG run's state;
* ``MAILSERVER_AIRFLOW_UNREACHABLE_TIMEOUT`` (s, default 300): how long a task tolerates Airflow
  not answering before it fails (the DAG run itself goes on);
* ``MAILSERVER_AIRFLOW_HTTP_TIMEOUT`` (s, default 30): one request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mailserver.settings import AirflowSettings as AirflowEnvironment
from mailserver.settings import SettingsError


class AirflowSettingsError(SettingsError):
    """A malformed or incomplete Airflow setting: the server refuses to start and names it."""


@dataclass(frozen=True)
class AirflowSettings:
    url: str
    username: str
    password: str = field(repr=False)
    poll_interval: float = 5.0
    unreachable_timeout: float = 300.0
    http_timeout: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AirflowSettings | None:
        try:
            s = AirflowEnvironment.from_env(env)
        except SettingsError as exc:
            raise AirflowSettingsError(str(exc)) from None
        url = s.url
        if not url:
            return None
        if not url.startswith(("http://", "https://")):
            raise AirflowSettingsError(f"MAILSERVER_AIRFLOW_URL: {url!r} is not an http(s) URL")
        username, password = s.username or "", s.password or ""
        missing = [n for n, v in (("MAILSERVER_AIRFLOW_USERNAME", username),
                                  ("MAILSERVER_AIRFLOW_PASSWORD", password)) if not v]
        if missing:
            raise AirflowSettingsError(f"MAILSERVER_AIRFLOW_URL is set but {' and '.join(missing)} is not")
        return cls(url.rstrip("/"), username, password,
                   poll_interval=s.poll_interval.total_seconds(),
                   unreachable_timeout=s.unreachable_timeout.total_seconds(),
                   http_timeout=s.http_timeout.total_seconds())
