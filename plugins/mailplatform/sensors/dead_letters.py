"""Wait until the event dead letters in a scope are gone: all of them, one group's, or one event.

* scope ``all``: WebAdmin's ``EventDeadLettersHealthCheck`` is healthy (James's check: one
  ``SELECT ... LIMIT 1`` over the whole table, as the operator sees it in ``/healthcheck``);
* scope ``group``: the group's partition of ``event_dead_letters`` has no row (CQL, ``LIMIT 1``);
* scope ``event``: that one row is gone.

Reads only, one row at most per poke. An unreachable WebAdmin counts as "not cleared yet". A
group whose events fail again after a redelivery comes back here after the bus's retries (about
25 s with James's backoff): that is what this gate is for, a timeout then means the listener
still fails.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import httpx
from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowException, AirflowSensorTimeout

from mailplatform.hooks.cassandra import CassandraHook
from mailplatform.hooks.webadmin import DEFAULT_CONN_ID as WEBADMIN_CONN_ID
from mailplatform.hooks.webadmin import WebAdminHook, describe, failing_components

EVENT_DEAD_LETTERS_CHECK = "EventDeadLettersHealthCheck"
SCOPES = ("all", "group", "event")
ANY_OF_GROUP = 'SELECT insertionid FROM event_dead_letters WHERE "group" = %s LIMIT 1'
ONE_EVENT = 'SELECT insertionid FROM event_dead_letters WHERE "group" = %s AND insertionid = %s'


class EventDeadLettersClearedSensor(BaseSensorOperator):
    template_fields: Sequence[str] = ("scope", "group", "insertion_id")
    ui_color = "#c8e6c9"

    def __init__(self, *, scope: str = "all", group: str | None = None, insertion_id: str | None = None,
                 webadmin_conn_id: str = WEBADMIN_CONN_ID, cassandra_conn_id: str = "cassandra_default",
                 request_timeout: float = 10.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scope, self.group, self.insertion_id = scope, group, insertion_id
        self.webadmin_conn_id = webadmin_conn_id
        self.cassandra_conn_id = cassandra_conn_id
        self.request_timeout = request_timeout
        self._last = "not checked yet"

    @property
    def last_reading(self) -> str:
        """What the last poke saw, or why it could not look: what a timeout reports."""
        return self._last

    def _checked_scope(self) -> tuple[str, str | None, uuid.UUID | None]:
        scope = str(self.scope)
        group = str(self.group) if self.group not in (None, "", "None") else None
        insertion_id = str(self.insertion_id) if self.insertion_id not in (None, "", "None") else None
        if scope not in SCOPES:
            raise AirflowException(f"scope must be one of {SCOPES}, not {scope!r}")
        if scope != "all" and not group:
            raise AirflowException(f"scope {scope} needs a group")
        if scope == "event":
            try:
                return scope, group, uuid.UUID(str(insertion_id))
            except ValueError as exc:
                raise AirflowException(f"scope event needs an insertion id (a UUID), got {insertion_id!r}") from exc
        return scope, group, None

    def poke(self, context: Any) -> bool:
        scope, group, insertion_id = self._checked_scope()
        if scope == "all":
            with WebAdminHook(self.webadmin_conn_id, timeout=self.request_timeout,
                              connect_timeout=self.request_timeout) as hook:
                try:
                    body = hook.health(checks=[EVENT_DEAD_LETTERS_CHECK])
                except httpx.TransportError as exc:
                    self._last = f"WebAdmin unreachable: {type(exc).__name__}: {exc}"
                    self.log.info("%s", self._last)
                    return False
            failing = failing_components(body)
            self._last = describe(failing) if failing else "no dead letter left"
        else:
            with CassandraHook(self.cassandra_conn_id).session() as session:
                if scope == "group":
                    rows = list(session.execute(ANY_OF_GROUP, (group,)))
                    self._last = f"group {group} still holds dead letters" if rows else f"group {group} is empty"
                else:
                    rows = list(session.execute(ONE_EVENT, (group, insertion_id)))
                    self._last = (f"dead letter {insertion_id} of {group} is still there" if rows
                                  else f"dead letter {insertion_id} of {group} is gone")
            failing = rows
        self.log.info("%s", self._last)
        return not failing

    def execute(self, context: Any) -> None:
        try:
            super().execute(context)
        except AirflowSensorTimeout as exc:
            raise AirflowSensorTimeout(f"{exc} Dead letters not cleared: {self._last}. Events failing again after "
                                       "a redelivery come back here: look at the listener's errors") from exc
