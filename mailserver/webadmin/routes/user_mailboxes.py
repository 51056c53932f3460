"""``/users/{u}/mailboxes`` (webadmin reference §8.1): a user's mailboxes, their counts, clearing one.

James's ``UserMailboxesRoutes`` and ``UserMailboxesService`` (code, not docs), through the
mailbox manager only (its rules, events and pre-deletion hooks apply):

* every route first checks that the user exists (404, details "User does not exist"), unless the
  ``force`` flag is present (the flag's presence is enough, as in James);
* names are checked as James's ``MailboxPath.assertAcceptable``: no empty hierarchy level (``.``
  is the delimiter), none of ``%*`` CR LF, not starting with ``#``, at most 200 characters
  (400, James's details), and no control character nor invalid UTF-8 (the model's rule, the
  same for IMAP and mailets); creating an existing mailbox is 204, as is deleting a missing one;
* deleting a mailbox deletes its children too, INBOX included when asked; ``DELETE
  /users/{u}/mailboxes`` deletes them all;
* ``messageCount`` / ``unseenMessageCount`` answer a bare number;
* ``DELETE .../{name}/messages`` is the ``ClearMailboxContentTask``.

``POST /users/{u}/mailboxes?task=...`` (reindexing, fast view, ``subscribeAll``) lives in
``procedures.py``, where James's registry for that route is.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from mailserver.mailbox.errors import MailboxExists, MailboxNotFound, MaintenanceMode
from mailserver.mailbox.hooks import PreDeletionHookFailed
from mailserver.mailbox.manager import MailboxManager
from mailserver.mailbox.store import MailboxCounters
from mailserver.model.address import Username
from mailserver.model.mailbox import DELIMITER, PRIVATE_NAMESPACE, InvalidMailboxName, MailboxPath
from mailserver.tasks.builtin.user_mailboxes import ClearMailboxContentTask
from mailserver.tasks.manager import TaskManager
from mailserver.users.api import UsersRepository
from mailserver.webadmin.errors import SERVER_ERROR, WebAdminError, bad_request, not_found
from mailserver.webadmin.routes.tasks import submitted
from mailserver.webadmin.routes.users import stored_username

NO_CONTENT = 204
# James's messages, per route (the PUT's 404 says "get", as James's does).
GET_ERROR, DELETE_ERROR = "Invalid get on user mailboxes", "Invalid delete on user mailboxes"
CREATE_INVALID = "Attempt to create an invalid mailbox"
TEST_INVALID = "Attempt to test existence of an invalid mailbox"
DELETE_INVALID = "Attempt to delete an invalid mailbox"


def acceptable_path(user: Username, name: str, invalid_message: str) -> MailboxPath:
    """James's ``MailboxPath.forUser(user, name).assertAcceptable('.')`` with its details; 400 otherwise."""
    try:
        MailboxPath(PRIVATE_NAMESPACE, user, name).assert_acceptable()
    except InvalidMailboxName as exc:
        raise bad_request(str(exc), invalid_message) from exc
    try:
        return MailboxPath.of(user, name)
    except InvalidMailboxName as exc:   # a hierarchy level of spaces only: James would keep it, we cannot
        raise bad_request(f"{PRIVATE_NAMESPACE}:{user}:{name}: {exc}", invalid_message) from exc


def maintenance(exc: MaintenanceMode) -> WebAdminError:
    return WebAdminError(503, "Mailbox writes are refused while the cluster is in maintenance mode", str(exc),
                         SERVER_ERROR)


def router(mailboxes: MailboxManager, users: UsersRepository, tasks: TaskManager | None) -> APIRouter:
    api = APIRouter(tags=["user mailboxes"])

    def checked_user(raw: str, request: Request, message: str) -> Username:
        user = stored_username(users, raw)
        if "force" not in request.query_params and not users.contains(user):
            raise not_found(message, "User does not exist")
        return user

    def delete_tree(user: Username, root: MailboxPath | None) -> None:
        """``root`` and its children (every mailbox of the user when None), deepest first."""
        doomed = [m.path for m in mailboxes.list_mailboxes(user)
                  if root is None or m.path == root or m.path.is_descendant_of(root)]
        try:
            for path in sorted(doomed, key=lambda p: p.name.count(DELIMITER), reverse=True):
                try:
                    mailboxes.delete_mailbox(path, recursive=True)
                except MailboxNotFound:
                    pass   # deleted meanwhile: what was asked is done
        except MaintenanceMode as exc:
            raise maintenance(exc) from exc
        except PreDeletionHookFailed as exc:   # the vault could not keep the messages: nothing of this one deleted
            raise WebAdminError(503, "The mailbox's messages could not be archived before deletion", str(exc),
                                SERVER_ERROR) from exc

    @api.get("/users/{username}/mailboxes", summary="The user's mailboxes (?force: skip the user check)")
    def list_mailboxes(username: str, request: Request) -> list[dict[str, str]]:
        user = checked_user(username, request, GET_ERROR)
        return [{"mailboxName": m.path.name, "mailboxId": str(m.id)} for m in mailboxes.list_mailboxes(user)]

    @api.delete("/users/{username}/mailboxes", status_code=NO_CONTENT,
                summary="Delete every mailbox of the user, with their messages")
    def delete_all(username: str, request: Request) -> Response:
        delete_tree(checked_user(username, request, DELETE_ERROR), None)
        return Response(status_code=NO_CONTENT)

    @api.get("/users/{username}/mailboxes/{name}", status_code=NO_CONTENT, summary="204 if the mailbox exists")
    def exists(username: str, name: str, request: Request) -> Response:
        user = checked_user(username, request, GET_ERROR)
        if not mailboxes.mailbox_exists(acceptable_path(user, name, TEST_INVALID)):
            raise not_found("Mailbox does not exist")
        return Response(status_code=NO_CONTENT)

    @api.put("/users/{username}/mailboxes/{name}", status_code=NO_CONTENT,
             summary="Create a mailbox and its missing parents ('.' separates levels); 204 if it exists")
    def create(username: str, name: str, request: Request) -> Response:
        user = checked_user(username, request, GET_ERROR)
        try:
            mailboxes.create_mailbox(acceptable_path(user, name, CREATE_INVALID))
        except MailboxExists:
            pass
        except MaintenanceMode as exc:
            raise maintenance(exc) from exc
        return Response(status_code=NO_CONTENT)

    @api.delete("/users/{username}/mailboxes/{name}", status_code=NO_CONTENT,
                summary="Delete a mailbox and its children, with their messages; 204 if it does not exist")
    def delete(username: str, name: str, request: Request) -> Response:
        user = checked_user(username, request, DELETE_ERROR)
        delete_tree(user, acceptable_path(user, name, DELETE_INVALID))
        return Response(status_code=NO_CONTENT)

    def counters(username: str, name: str, request: Request) -> MailboxCounters:
        user = checked_user(username, request, GET_ERROR)
        try:
            return mailboxes.counters(MailboxPath.of(user, name))
        except (MailboxNotFound, InvalidMailboxName) as exc:   # an invalid name names no mailbox (James)
            raise not_found(GET_ERROR, f"{PRIVATE_NAMESPACE}:{user}:{name} can not be found") from exc

    @api.get("/users/{username}/mailboxes/{name}/messageCount", summary="Number of messages (bare number)")
    def message_count(username: str, name: str, request: Request) -> JSONResponse:
        return JSONResponse(counters(username, name, request).count)

    @api.get("/users/{username}/mailboxes/{name}/unseenMessageCount",
             summary="Number of messages without \\Seen (bare number)")
    def unseen_message_count(username: str, name: str, request: Request) -> JSONResponse:
        return JSONResponse(counters(username, name, request).unseen)

    if tasks is None:
        return api

    @api.delete("/users/{username}/mailboxes/{name}/messages", status_code=201,
                summary="Task ClearMailboxContentTask: delete every message of the mailbox")
    def clear(username: str, name: str, request: Request) -> Response:
        user = checked_user(username, request, GET_ERROR)
        path = acceptable_path(user, name, "Attempt to clear an invalid mailbox")
        if not mailboxes.mailbox_exists(path):
            raise not_found(GET_ERROR, f"Mailbox does not exist. {path.as_string()}")
        return submitted(tasks.submit(ClearMailboxContentTask(mailboxes, user, name)))

    return api
