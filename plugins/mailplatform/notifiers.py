"""Failure alerts through one Airflow connection, ``mailplatform_alerts``; its type chooses the channel.

* ``http``/``https`` (the default channel): a JSON POST (``httpx``) to the connection's URL: the
  ``url`` of its extra, else its host when it holds a whole URL, else ``<type>://host:port/<schema>``
  (what ``AIRFLOW_CONN_MAILPLATFORM_ALERTS='https://hooks.example.org:443/alerts'`` gives);
* ``smtp``/``email``: a mail through the SMTP server the connection names (the platform's own
  SMTP) with the smtp provider's notifier; extra ``to`` (required) and ``from``.

No connection: the alert is logged and dropped (a missing alert channel must not fail a task).
The payload: ``event`` (``run_failed`` or ``task_failed``: a task failed with no retry left),
``dag_id``, ``run_id``, ``task_id``, ``try_number``, ``owner``, ``error``, ``logical_date``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from airflow.sdk import BaseHook, BaseNotifier

CONN_ID = "mailplatform_alerts"
WEBHOOK_TYPES = ("http", "https")
EMAIL_TYPES = ("smtp", "email")


def webhook_url(conn: Any) -> str:
    extra = conn.extra_dejson or {}
    if extra.get("url"):
        return str(extra["url"])
    host = conn.host or ""
    if "://" in host:
        return host
    port = f":{conn.port}" if conn.port else ""
    path = f"/{conn.schema.lstrip('/')}" if conn.schema else ""
    return f"{conn.conn_type}://{host}{port}{path}"


def alert_payload(event: str, context: Any) -> dict[str, Any]:
    ti, dag_run = context.get("ti"), context.get("dag_run")
    error = context.get("exception") or context.get("reason")
    first_line = str(error).strip().splitlines()[0] if error else None
    task = context.get("task")
    # A run's callback may get only the DAG, the run id and the reason (no task instance, no run).
    return {"event": event, "dag_id": getattr(ti, "dag_id", None) or getattr(dag_run, "dag_id", None)
            or getattr(context.get("dag"), "dag_id", None),
            "run_id": getattr(ti, "run_id", None) or getattr(dag_run, "run_id", None) or context.get("run_id"),
            "task_id": getattr(ti, "task_id", None) if event == "task_failed" else None,
            "try_number": getattr(ti, "try_number", None) if event == "task_failed" else None,
            "owner": getattr(task, "owner", None), "error": first_line,
            "logical_date": str(getattr(dag_run, "logical_date", None) or "") or None}


class PlatformAlertNotifier(BaseNotifier):
    """Sends ``event`` with the run's context to the ``mailplatform_alerts`` connection."""

    template_fields = ()

    def __init__(self, event: str, conn_id: str = CONN_ID, timeout: float = 10.0) -> None:
        super().__init__()
        self.event = event
        self.conn_id = conn_id
        self.timeout = timeout

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        # Nothing of this notifier is templated, and the base class would ask the context's DAG for
        # its Jinja environment: the DAG ``dag.test()`` hands to run callbacks is the scheduler's
        # serialized copy, which has none (AttributeError, and the alert was lost).
        if not self.template_fields:
            return
        if jinja_env is None and not hasattr(context.get("dag"), "get_template_env"):
            jinja_env = self.get_template_env(dag=None)
        super().render_template_fields(context, jinja_env)

    def notify(self, context: Any) -> None:
        payload = alert_payload(self.event, context)
        try:
            conn = BaseHook.get_connection(self.conn_id)
        except Exception:   # not configured: the alert exists only in this log
            self.log.warning("no %s connection: alert not sent: %s", self.conn_id, json.dumps(payload))
            return
        if conn.conn_type in EMAIL_TYPES:
            self._mail(conn, payload, context)
        else:
            response = httpx.post(webhook_url(conn), json=payload, timeout=self.timeout)
            response.raise_for_status()
        self.log.info("alert %s sent through %s", self.event, self.conn_id)

    def _mail(self, conn: Any, payload: dict[str, Any], context: Any) -> None:
        from airflow.providers.smtp.notifications.smtp import SmtpNotifier

        extra = conn.extra_dejson or {}
        subject = f"[{payload['owner'] or 'airflow'}] {payload['dag_id']} {payload['event'].replace('_', ' ')}"
        body = "<pre>" + json.dumps(payload, indent=2) + "</pre>"
        SmtpNotifier(to=extra["to"], from_email=extra.get("from") or conn.login, subject=subject,
                     html_content=body, smtp_conn_id=self.conn_id).notify(context)
