"""James's maintenance-procedure routes (webadmin reference §7, §10.2-§10.4, §10.6), run as Airflow DAG runs.

Each route validates its request as James does (selector, safety header, parameter values: 400;
unknown user: 404), turns it into the DAG run's conf through the one table of
``mailserver.airflow.procedures``, and submits a ``DagRunTask``: ``201`` + ``{"taskId"}``; the
task view then follows the DAG run. Without Airflow configured the request is still validated,
then answered ``503`` (``ServerError``): the procedures exist only as DAGs.

The fast-view recompute is served on ``/mailboxes`` and ``/users/{u}/mailboxes`` (James's code)
and on ``/messages`` and ``/users/{u}/messages`` (the variant James's distributed docs show).
``POST /users/{u}/mailboxes`` also takes James's ``subscribeAll``, an in-process task (not a DAG),
offered when the node has the mailboxes and the subscriptions.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from mailserver.airflow import procedures as p
from mailserver.airflow.api import DagRuns
from mailserver.model.address import Username
from mailserver.tasks.api import Task, TaskNotFound
from mailserver.tasks.builtin.dag_run import DagRunTask
from mailserver.tasks.manager import TaskManager
from mailserver.users.api import UsersRepository
from mailserver.webadmin.errors import SERVER_ERROR, WebAdminError, bad_request, not_found
from mailserver.webadmin.routes import params
from mailserver.webadmin.routes.tasks import submitted
from mailserver.webadmin.routes.users import stored_username

if TYPE_CHECKING:
    from mailserver.mailbox.manager import MailboxManager
    from mailserver.mailbox.subscriptions import SubscriptionStore

SAFETY_HEADER = "I-KNOW-WHAT-I-M-DOING"
SAFETY_VALUE = "ALL-SERVICES-ARE-OFFLINE"
SAFETY_DETAILS = (f"Due to concurrency risks, a `{SAFETY_HEADER}` header should be positioned to `{SAFETY_VALUE}` "
                  "in order to prevent accidental calls. Check the documentation for details.")
FAST_VIEW = "recomputeFastViewProjectionItems"
REINDEX = "reIndex"
RETRY_FAILED = "reIndexFailedMessagesOf"
SUBSCRIBE_ALL = "subscribeAll"

# Selector value -> procedure, per route (values are case-sensitive, as James's).
CREATE_MISSING_PARENTS = "createMissingParents"
MAILBOXES_TASKS = {"SolveInconsistencies": p.SOLVE_MAILBOX_INCONSISTENCIES,
                   "RecomputeMailboxCounters": p.RECOMPUTE_MAILBOX_COUNTERS,
                   FAST_VIEW: p.RECOMPUTE_ALL_FAST_VIEW_PROJECTION, REINDEX: p.REINDEX_ALL}
MESSAGES_TASKS = {"SolveInconsistencies": p.SOLVE_MESSAGE_INCONSISTENCIES,
                  FAST_VIEW: p.RECOMPUTE_ALL_FAST_VIEW_PROJECTION}
USER_TASKS = {FAST_VIEW: p.RECOMPUTE_USER_FAST_VIEW_PROJECTION, REINDEX: p.REINDEX_USER}
MAILBOX_TASKS = {REINDEX: p.REINDEX_MAILBOX}
MAILBOX_MESSAGE_TASKS = {REINDEX: p.REINDEX_MESSAGE}
MAPPINGS_ACTIONS = {"SolveInconsistencies": p.SOLVE_MAPPINGS_SOURCES_INCONSISTENCIES}
QUOTA_TASKS = {"RecomputeCurrentQuotas": p.RECOMPUTE_CURRENT_QUOTAS}
# Procedures James refuses unless the operator states that traffic is stopped.
NEED_SAFETY_HEADER = frozenset({p.SOLVE_MAILBOX_INCONSISTENCIES.task_type})


def not_configured(procedure: p.DagProcedure) -> WebAdminError:
    return WebAdminError(503, "Airflow is not configured on this server",
                         f"{procedure.task_type} runs as the Airflow DAG {procedure.dag_id}: set "
                         "MAILSERVER_AIRFLOW_URL, MAILSERVER_AIRFLOW_USERNAME and MAILSERVER_AIRFLOW_PASSWORD",
                         SERVER_ERROR)


def conf_of(procedure: p.DagProcedure, request: Request, path: Mapping[str, str] | None = None,
            body: str | None = None) -> dict:
    query = {name: request.query_params.getlist(name) for name in request.query_params}
    try:
        return procedure.conf(query, path, body)
    except ValueError as exc:
        raise bad_request(str(exc)) from exc


def check_safety_header(procedure: p.DagProcedure, request: Request) -> None:
    if procedure.task_type in NEED_SAFETY_HEADER and \
            (request.headers.get(SAFETY_HEADER) or "").strip().lower() != SAFETY_VALUE.lower():
        raise bad_request(SAFETY_DETAILS)


INVALID_TASK_ID = "Invalid task id"


def previous_reindex_run(tasks: TaskManager, raw: str) -> str:
    """The DAG run of the reindex task ``raw`` (James's ``reIndexFailedMessagesOf``), whose report lists
    the failures to redo. Every refusal is James's 400: not a task id, unknown, unfinished, not a reindex."""
    try:
        task_id = uuid.UUID(raw.strip())
    except ValueError:
        raise WebAdminError(400, INVALID_TASK_ID, f"'{raw}' is not a task id") from None
    try:
        details = tasks.get(task_id)
    except TaskNotFound:
        raise WebAdminError(400, f"TaskId {task_id} does not exist") from None
    if not details.status.finished:
        raise WebAdminError(400, INVALID_TASK_ID,
                            f"Task is not yet finished. Current status is: {details.status.value}")
    run_id = details.parameters.get("dagRunId")
    if details.type not in p.REINDEX_RETRIABLE or details.parameters.get("dagId") != p.REINDEX_ALL.dag_id \
            or not run_id:
        raise WebAdminError(400, INVALID_TASK_ID,
                            f"'{details.type}' is not a valid type of task for retrying a failed indexing")
    if "messageFailures" not in (details.additional_information or {}):
        raise WebAdminError(400, INVALID_TASK_ID,
                            f"task {task_id} lists no failures: its DAG run {run_id} ended without a report "
                            "(the Spark job failed before the end); run the reindex again")
    return str(run_id)


class ProcedureSubmitter:
    """Turns a validated request into a submitted ``DagRunTask`` (or the 503 when Airflow is absent)."""

    def __init__(self, tasks: TaskManager, dag_runs: DagRuns | None) -> None:
        self.tasks = tasks
        self.dag_runs = dag_runs

    async def submit(self, procedure: p.DagProcedure, conf: dict) -> Response:
        if self.dag_runs is None:
            raise not_configured(procedure)
        # Only its parameters are stored: the worker that claims it rebuilds it with its own Airflow client.
        task = DagRunTask.submit(self.dag_runs, procedure, conf)
        return submitted(await run_in_threadpool(self.tasks.submit, task))


def in_process_mailboxes_tasks(mailboxes: MailboxManager | None) -> dict[str, Callable[[], Task]]:
    """The ``POST /mailboxes?task=`` values run in process when this node has the mailboxes: James's
    ``CreateMissingParentsTask`` and ``SolveMailboxFlagInconsistencyTask`` (one per target flag)."""
    if mailboxes is None:
        return {}
    from mailserver.tasks.builtin.flag_inconsistencies import SELECTORS, SolveMailboxFlagInconsistencyTask
    from mailserver.tasks.builtin.user_mailboxes import CreateMissingParentsTask

    def flag_task(flag: str) -> Callable[[], Task]:
        return lambda: SolveMailboxFlagInconsistencyTask(mailboxes, flag)

    return {CREATE_MISSING_PARENTS: lambda: CreateMissingParentsTask(mailboxes),
            **{selector: flag_task(flag) for selector, flag in SELECTORS.items()}}


def subscribe_all_task(mailboxes: MailboxManager | None,
                       subscriptions: SubscriptionStore | None) -> Callable[[Username], Task] | None:
    """James's ``SubscribeAllTask`` for a user, when this node has what it needs."""
    if mailboxes is None or subscriptions is None:
        return None
    from mailserver.tasks.builtin.user_mailboxes import SubscribeAllTask

    return lambda user: SubscribeAllTask(mailboxes, subscriptions, user)


def router(tasks: TaskManager, dag_runs: DagRuns | None, users: UsersRepository,
           subscribe_all: Callable[[Username], Task] | None = None,
           mailboxes_tasks: Mapping[str, Callable[[], Task]] | None = None) -> APIRouter:
    api = APIRouter(tags=["maintenance procedures (Airflow)"])
    submitter = ProcedureSubmitter(tasks, dag_runs)

    async def selected(request: Request, name: str, table: dict[str, p.DagProcedure],
                       path: Callable[[], Mapping[str, str]] | None = None) -> Response:
        procedure = table[params.selector(request.query_params.get(name), name, list(table))]
        check_safety_header(procedure, request)
        conf = conf_of(procedure, request)   # 400 before 404, as James validates
        if path is not None:
            conf = conf_of(procedure, request, await run_in_threadpool(path))
        return await submitter.submit(procedure, conf)

    def existing_user(username: str) -> dict[str, str]:
        user = stored_username(users, username)
        if not users.contains(user):
            raise not_found(f"User {user} does not exist")
        return {"username": user.value}

    @api.post("/mailboxes", status_code=201,
              summary="Task: ?task=SolveInconsistencies (header I-KNOW-WHAT-I-M-DOING: ALL-SERVICES-ARE-OFFLINE; "
                      "maxIterations, autoMerge), RecomputeMailboxCounters (trustMessageProjection), "
                      "recomputeFastViewProjectionItems (messagesPerSecond), reIndex (mode, messagesPerSecond; "
                      "reIndexFailedMessagesOf={taskId}: only the failures of that reindex task); "
                      "all: dryRun. Runs as an Airflow DAG. In process: ?task=createMissingParents "
                      "(CreateMissingParentsTask), SolveMessageDeletedInconsistencies and "
                      "SolveMessageRecentInconsistencies (solve-mailbox-flag-inconsistencies)")
    async def mailboxes(request: Request) -> Response:
        if mailboxes_tasks:
            name = params.selector(request.query_params.get("task"), "task", [*MAILBOXES_TASKS, *mailboxes_tasks])
            if name in mailboxes_tasks:
                return submitted(await run_in_threadpool(tasks.submit, mailboxes_tasks[name]()))
        previous = request.query_params.get(RETRY_FAILED)
        if request.query_params.get("task") == REINDEX and previous:   # empty: ignored, as James
            return await selected(request, "task", {REINDEX: p.REINDEX_ERRORS},
                                  lambda: {RETRY_FAILED: previous_reindex_run(tasks, previous)})
        return await selected(request, "task", MAILBOXES_TASKS)

    @api.post("/mailboxes/{mailbox_id}", status_code=201,
              summary="Task: ?task=reIndex of one mailbox (mode, messagesPerSecond, dryRun). Runs as an Airflow DAG")
    async def mailbox(mailbox_id: str, request: Request) -> Response:
        return await selected(request, "task", MAILBOX_TASKS, lambda: {"mailboxId": mailbox_id})

    @api.post("/mailboxes/{mailbox_id}/mails/{uid}", status_code=201,
              summary="Task: ?task=reIndex of one message of one mailbox (mode, messagesPerSecond, dryRun). "
                      "Runs as an Airflow DAG")
    async def mailbox_message(mailbox_id: str, uid: str, request: Request) -> Response:
        return await selected(request, "task", MAILBOX_MESSAGE_TASKS, lambda: {"mailboxId": mailbox_id, "uid": uid})

    @api.post("/messages", status_code=201,
              summary="Task: ?task=SolveInconsistencies or recomputeFastViewProjectionItems (messagesPerSecond, "
                      "dryRun). Runs as an Airflow DAG")
    async def messages(request: Request) -> Response:
        return await selected(request, "task", MESSAGES_TASKS)

    @api.post("/users/{username}/mailboxes", status_code=201,
              summary="Task: ?task=recomputeFastViewProjectionItems for one user (messagesPerSecond, dryRun) or "
                      "reIndex (Airflow DAG runs); ?task=subscribeAll (SubscribeAllTask); 404 unknown user")
    async def user_mailboxes(username: str, request: Request) -> Response:
        if subscribe_all is None:
            return await selected(request, "task", USER_TASKS, lambda: existing_user(username))
        supported = [*USER_TASKS, SUBSCRIBE_ALL]
        if params.selector(request.query_params.get("task"), "task", supported) != SUBSCRIBE_ALL:
            return await selected(request, "task", USER_TASKS, lambda: existing_user(username))
        user = stored_username(users, username)
        if not await run_in_threadpool(users.contains, user):
            raise not_found(f"User '{user}' does not exist")
        return submitted(await run_in_threadpool(tasks.submit, subscribe_all(user)))

    @api.post("/users/{username}/messages", status_code=201,
              summary="Task: ?task=recomputeFastViewProjectionItems for one user (docs' path). Runs as an Airflow DAG")
    async def user_messages(username: str, request: Request) -> Response:
        return await selected(request, "task", USER_TASKS, lambda: existing_user(username))

    @api.post("/cassandra/mappings", status_code=201,
              summary="Task: ?action=SolveInconsistencies (rebuild mappings_sources from rrt; dryRun). "
                      "Runs as an Airflow DAG")
    async def mappings(request: Request) -> Response:
        return await selected(request, "action", MAPPINGS_ACTIONS)

    @api.post("/quota/users", status_code=201,
              summary="Task: ?task=RecomputeCurrentQuotas (usersPerSecond, quotaComponent repeatable: MAILBOX, "
                      "SIEVE, JMAP_UPLOADS; dryRun). Runs as an Airflow DAG")
    async def quotas(request: Request) -> Response:
        return await selected(request, "task", QUOTA_TASKS)

    return api
