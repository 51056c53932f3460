"""``DELETE /messages?olderThan=`` / ``?byExpiresHeader``: James's ``MessagesRoutes.expireMailbox``,
the in-process ``ExpireMailboxTask`` (``tasks.builtin.expire_mailbox``)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from mailserver.mailbox.manager import MailboxManager
from mailserver.model.address import Username
from mailserver.model.james_units import InvalidDuration, parse_duration
from mailserver.model.java_numbers import JAVA_INT_MAX, NotAnInteger, OutOfRange, parse_integer
from mailserver.tasks.builtin.expire_mailbox import ExpireMailboxTask, RunningOptions
from mailserver.tasks.manager import TaskManager
from mailserver.users.api import UsersRepository
from mailserver.webadmin.errors import bad_request
from mailserver.webadmin.routes import params
from mailserver.webadmin.routes.tasks import submitted


def running_options(query: dict[str, str]) -> RunningOptions:
    """James's ``RunningOptions.fromParams``, its checks in its order and with its messages."""
    older_than, by_header = query.get("olderThan"), query.get("byExpiresHeader")
    if (older_than is None) == (by_header is None):
        raise bad_request("Must specify either 'olderThan' or 'byExpiresHeader' parameter")
    users_per_second = 1
    if query.get("usersPerSecond") is not None:
        try:
            users_per_second = parse_integer(query["usersPerSecond"], -JAVA_INT_MAX - 1, JAVA_INT_MAX)
        except (NotAnInteger, OutOfRange):
            raise bad_request("'usersPerSecond' must be numeric") from None
    if users_per_second <= 0:
        raise bad_request("'usersPerSecond' must be strictly positive")
    options = RunningOptions(users_per_second, query.get("mailbox", "INBOX"), by_header is not None, older_than,
                             "useSavedDate" in query, query.get("user"))
    if older_than is not None:
        try:
            parse_duration(older_than, "days")
        except InvalidDuration as exc:
            if exc.problem == InvalidDuration.NEGATIVE:
                raise bad_request("Duration amount should be positive") from exc
            try:
                params.parse_duration(older_than, "days")
            except ValueError as james:   # James's DurationParser messages
                raise bad_request(str(james)) from exc
    return options


def router(mailboxes: MailboxManager, users: UsersRepository, tasks: TaskManager) -> APIRouter:
    api = APIRouter(tags=["messages"])

    @api.delete("/messages", status_code=201,
                summary="Task ExpireMailboxTask: delete messages of a mailbox (mailbox, INBOX by default) of every "
                        "user (or user) by age (olderThan, useSavedDate) or Expires header (byExpiresHeader); "
                        "usersPerSecond")
    async def expire(request: Request) -> Response:
        options = running_options(dict(request.query_params))
        if options.user is not None and not await run_in_threadpool(users.contains, Username.of(options.user)):
            raise bad_request("user does not exist")
        return submitted(await run_in_threadpool(tasks.submit, ExpireMailboxTask(mailboxes, users, options)))

    return api
