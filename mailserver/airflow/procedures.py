"""The one table from James's admin routes to the maintenance DAGs.

Each procedure is James's task type (the name WebAdmin's task view shows), the DAG that runs
it, and how the request's parameters become the DAG run's ``conf``: every ``DagParam`` reads one
request parameter (query, path or body), parses it as James does (``ValueError`` carries James's
message, answered 400) and names the DAG param it feeds. Nothing else reaches a DAG: a request
parameter not listed is ignored (James ignores unknown query parameters), and a DAG param listed
here that the DAG does not declare makes the task fail before triggering
(``api.trigger_checked``) instead of being dropped silently by Airflow.

Parameters the admin does not give are not sent: the DAG's defaults apply (a Spark job's
``rate`` is not James's per-message loop rate, see docs/compatibility.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mailserver.model.java_numbers import JAVA_INT_MAX, JAVA_LONG_MAX, NotAnInteger, OutOfRange, parse_integer

QUOTA_COMPONENTS = ("MAILBOX", "SIEVE", "JMAP_UPLOADS")


class Source(StrEnum):
    QUERY = "query"
    PATH = "path"
    BODY = "body"


def strictly_positive(name: str, maximum: int = JAVA_INT_MAX) -> Callable[[Sequence[str]], int]:
    """A whole number from 1 to ``maximum`` (James reads these into an ``int``, a uid into a ``long``)."""
    def parse(values: Sequence[str]) -> int:
        raw = values[0].strip()
        try:
            value = parse_integer(raw, -maximum, maximum)
        except NotAnInteger:
            raise ValueError(f'For input string: "{values[0]}"') from None
        except OutOfRange:
            raise ValueError(f"'{name}' must be at most {maximum}") from None
        if value <= 0:
            raise ValueError(f"'{name}' must be strictly positive")
        return value
    return parse


def boolean(name: str) -> Callable[[Sequence[str]], bool]:
    def parse(values: Sequence[str]) -> bool:
        raw = values[0].strip().lower()
        if raw not in ("true", "false"):
            raise ValueError(f"'{name}' must be a boolean (true or false), got '{values[0]}'")
        return raw == "true"
    return parse


def quota_components(values: Sequence[str]) -> list[str]:
    parsed = []
    for raw in values:
        value = raw.strip().upper()
        if value not in QUOTA_COMPONENTS:
            raise ValueError(f"Invalid quotaComponent '{raw}'. Supported values are [{', '.join(QUOTA_COMPONENTS)}]")
        if value not in parsed:
            parsed.append(value)
    return parsed


def text(values: Sequence[str]) -> str:
    return values[0]


def only_false(name: str, reason: str) -> Callable[[Sequence[str]], None]:
    """A James option this platform does not offer: its default (false) is accepted, true is a 400."""
    parse_boolean = boolean(name)

    def parse(values: Sequence[str]) -> None:
        if parse_boolean(values):
            raise ValueError(f"'{name}=true' is not supported: {reason}")
    return parse


@dataclass(frozen=True)
class DagParam:
    request: str                                  # James's parameter name (query), or the path/body slot
    dag_param: str | None                         # the DAG's param it feeds; None: validated, never sent
    parse: Callable[[Sequence[str]], Any]
    source: Source = Source.QUERY
    information: str | None = None                # echoed in additionalInformation under this name


@dataclass(frozen=True)
class DagProcedure:
    task_type: str
    dag_id: str
    params: tuple[DagParam, ...] = ()

    def conf(self, query: Mapping[str, Sequence[str]], path: Mapping[str, str] | None = None,
             body: str | None = None) -> dict[str, Any]:
        """The DAG run's conf from the request; ValueError (James's message) for a bad value."""
        conf: dict[str, Any] = {}
        for p in self.params:
            values: Sequence[str] | None
            if p.source is Source.QUERY:
                values = [v for v in query.get(p.request, ()) if v != ""] or None
            elif p.source is Source.PATH:
                values = [path[p.request]] if path and p.request in path else None
            else:
                values = [body] if body is not None else None
            if values is not None:
                value = p.parse(values)
                if p.dag_param is not None:
                    conf[p.dag_param] = value
        return conf

    def information(self, conf: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of James's additionalInformation that echo the request (``toVersion``, ``username``)."""
        return {p.information: conf.get(p.dag_param) for p in self.params if p.information and p.dag_param}


# Extension of every repair procedure (not a James parameter): detect and report only.
DRY_RUN = DagParam("dryRun", "dry_run", boolean("dryRun"))
MESSAGES_PER_SECOND = DagParam("messagesPerSecond", "rate", strictly_positive("messagesPerSecond"))

SOLVE_MESSAGE_INCONSISTENCIES = DagProcedure(
    "solve-message-inconsistencies", "solve_message_inconsistencies", (MESSAGES_PER_SECOND, DRY_RUN))
SOLVE_MAILBOX_INCONSISTENCIES = DagProcedure(
    "solve-mailbox-inconsistencies", "solve_mailbox_inconsistencies",
    (DagParam("maxIterations", "max_iterations", strictly_positive("maxIterations")),
     DagParam("autoMerge", None, only_false(
         "autoMerge", "ghost mailboxes are reported in conflictingEntries and merged by hand "
                      "(see the solve_mailbox_inconsistencies DAG's documentation)")), DRY_RUN))
SOLVE_MAPPINGS_SOURCES_INCONSISTENCIES = DagProcedure(
    "cassandra-mappings-solve-inconsistencies", "solve_mappings_sources_inconsistencies", (DRY_RUN,))
RECOMPUTE_MAILBOX_COUNTERS = DagProcedure(
    "recompute-mailbox-counters", "recompute_mailbox_counters",
    (DagParam("trustMessageProjection", "trust_message_projection", boolean("trustMessageProjection")), DRY_RUN))
RECOMPUTE_CURRENT_QUOTAS = DagProcedure(
    "recompute-current-quotas", "recompute_current_quotas",
    (DagParam("usersPerSecond", "rate", strictly_positive("usersPerSecond")),
     DagParam("quotaComponent", "quota_components", quota_components), DRY_RUN))
RECOMPUTE_ALL_FAST_VIEW_PROJECTION = DagProcedure(
    "RecomputeAllFastViewProjectionItemsTask", "recompute_fast_view_projection", (MESSAGES_PER_SECOND, DRY_RUN))
RECOMPUTE_USER_FAST_VIEW_PROJECTION = DagProcedure(
    "RecomputeUserFastViewProjectionItemsTask", "recompute_fast_view_projection",
    (DagParam("username", "user", text, Source.PATH, information="username"), MESSAGES_PER_SECOND, DRY_RUN))
CASSANDRA_MIGRATION = DagProcedure(
    "cassandra-migration", "cassandra_schema_migration",
    (DagParam("version", "target_version", strictly_positive("version"), Source.BODY, information="toVersion"),))

REINDEX_MODES = {"rebuildall": "rebuildAll", "fixoutdated": "fixOutdated"}


def reindex_mode(values: Sequence[str]) -> str:
    """James's ``mode`` (case-insensitive); an unknown value is a 400 here (James falls back to rebuildAll)."""
    mode = REINDEX_MODES.get(values[0].strip().lower())
    if mode is None:
        raise ValueError(f"Invalid value supplied for query parameter 'mode': {values[0]}. "
                         "Supported values are [rebuildAll, fixOutdated]")
    return mode


def mailbox_id(values: Sequence[str]) -> str:
    import uuid

    try:
        return str(uuid.UUID(values[0].strip()))
    except ValueError:
        raise ValueError(f"Error while parsing 'mailbox': {values[0]} is not a mailbox id") from None


# James's reIndex tasks (webadmin reference §9): the reindex_mailboxes DAG, messagesPerSecond is its own rate.
REINDEX_OPTIONS = (DagParam("mode", "mode", reindex_mode),
                   DagParam("messagesPerSecond", "messages_per_second", strictly_positive("messagesPerSecond")),
                   DRY_RUN)
REINDEX_ALL = DagProcedure("full-reindexing", "reindex_mailboxes", REINDEX_OPTIONS)
REINDEX_USER = DagProcedure("user-reindexing", "reindex_mailboxes",
                            (DagParam("username", "user", text, Source.PATH, information="username"),
                             *REINDEX_OPTIONS))
REINDEX_MAILBOX = DagProcedure("mailbox-reindexing", "reindex_mailboxes",
                               (DagParam("mailboxId", "mailbox_id", mailbox_id, Source.PATH, information="mailboxId"),
                                *REINDEX_OPTIONS))
REINDEX_MESSAGE = DagProcedure("message-reindexing", "reindex_mailboxes",
                               (DagParam("mailboxId", "mailbox_id", mailbox_id, Source.PATH, information="mailboxId"),
                                DagParam("uid", "uid", strictly_positive("uid", JAVA_LONG_MAX), Source.PATH,
                                         information="uid"),
                                *REINDEX_OPTIONS))
# James's reIndexFailedMessagesOf: the route resolves the previous task to its DAG run (path slot).
REINDEX_ERRORS = DagProcedure("error-recovery-indexation", "reindex_mailboxes",
                              (DagParam("reIndexFailedMessagesOf", "failures_of", text, Source.PATH),
                               *REINDEX_OPTIONS))
# The task types whose report lists messageFailures/mailboxFailures (James's IndexingDetailInformation).
REINDEX_RETRIABLE = frozenset({REINDEX_ALL.task_type, REINDEX_USER.task_type, REINDEX_MAILBOX.task_type,
                               REINDEX_ERRORS.task_type})

PROCEDURES: dict[str, DagProcedure] = {p.task_type: p for p in (
    SOLVE_MESSAGE_INCONSISTENCIES, SOLVE_MAILBOX_INCONSISTENCIES, SOLVE_MAPPINGS_SOURCES_INCONSISTENCIES,
    RECOMPUTE_MAILBOX_COUNTERS, RECOMPUTE_CURRENT_QUOTAS, RECOMPUTE_ALL_FAST_VIEW_PROJECTION,
    RECOMPUTE_USER_FAST_VIEW_PROJECTION, CASSANDRA_MIGRATION, REINDEX_ALL, REINDEX_USER, REINDEX_MAILBOX,
    REINDEX_MESSAGE, REINDEX_ERRORS)}
