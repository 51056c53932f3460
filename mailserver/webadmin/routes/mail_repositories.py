"""``/mailRepositories`` (webadmin reference §11): list, create, browse, read, delete, clear, reprocess, move.

A repository is addressed by its path URL-encoded as one segment (``var%2Fmail%2Ferror%2F``).
The ASGI path is already decoded (``var/mail/error/`` would look like three segments), so the
routes here match any sub-path and split the *raw* path themselves, segment by segment.
Repositories are stored under URLs (``cassandra://var/mail/error/``); the path is the URL
without its protocol.
"""

from __future__ import annotations

import email
import email.policy
import json
import re
import urllib.parse
from collections.abc import Callable
from datetime import UTC, datetime
from email.parser import BytesParser
from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from mailserver.mailbox.content import body_text
from mailserver.model.java_numbers import loads
from mailserver.model.mail import Mail
from mailserver.queue.api import SPOOL, MailQueueFactory
from mailserver.queue.content import MimeMessageStore
from mailserver.repository.api import MailRepository, MailRepositoryStore
from mailserver.tasks.api import Task, format_date
from mailserver.tasks.builtin.mailrepository import (
    ClearMailRepositoryTask,
    ReprocessingAllMailsTask,
    ReprocessingOneMailTask,
    repository_path,
)
from mailserver.tasks.manager import TaskManager
from mailserver.webadmin.errors import WebAdminError, bad_request, not_found
from mailserver.webadmin.routes import params
from mailserver.webadmin.routes.tasks import submitted

NO_CONTENT = 204
BASE = "/mailRepositories"
_URL_PREFIX = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://")   # a URL given as the path
REPROCESS = "reprocess"
ADDITIONAL_FIELDS = ("attributes", "perRecipientsHeaders", "textBody", "htmlBody", "headers", "messageSize")


def encode(path: str) -> str:
    return urllib.parse.quote(path, safe="")


def router(repositories: MailRepositoryStore, tasks: TaskManager | None, queues: MailQueueFactory | None,
           contents: MimeMessageStore | None = None) -> APIRouter:
    api = APIRouter(tags=["mail repositories"])
    routes = _Routes(repositories, tasks, queues, contents)

    @api.get(BASE, summary="Every repository: [{repository, path}]")
    def list_repositories() -> list[dict[str, str]]:
        paths = sorted({repository_path(url) for url in repositories.urls()})
        return [{"repository": p, "path": encode(p)} for p in paths]

    @api.get(BASE + "/{rest:path}", summary="{path}: size; {path}/mails: keys; {path}/mails/{key}: one mail")
    def get(request: Request) -> Any:
        segments = _segments(request)
        if len(segments) == 1:
            return routes.info(*segments)
        if len(segments) == 2:
            return routes.keys(segments[0], request)
        return routes.mail(segments[0], segments[2], request)

    @api.put(BASE + "/{rest:path}", status_code=NO_CONTENT, summary="{path}?protocol=cassandra: create")
    def put(request: Request) -> Response:
        segments = _segments(request, shapes=(1,))
        return routes.create(segments[0], request.query_params.get("protocol"))

    @api.delete(BASE + "/{rest:path}", summary="{path}/mails: clear (task); {path}/mails/{key}: delete one")
    def delete(request: Request) -> Response:
        segments = _segments(request, shapes=(2, 3))
        if len(segments) == 2:
            return routes.clear(segments[0])
        return routes.delete(segments[0], segments[2])

    @api.patch(BASE + "/{rest:path}",
               summary="{path}/mails[/{key}]: ?action=reprocess (task), or move with {\"mailRepository\": ...}")
    async def patch(request: Request) -> Response:
        segments = _segments(request, shapes=(2, 3))
        key = segments[2] if len(segments) == 3 else None
        body = (await request.body()).strip()
        if body:   # a body switches the route to "move" (James)
            return await run_in_threadpool(routes.move, segments[0], key, body)
        return await run_in_threadpool(routes.reprocess, segments[0], key, request)

    return api


def _segments(request: Request, shapes: tuple[int, ...] = (1, 2, 3)) -> list[str]:
    """Decoded segments after ``/mailRepositories/``: [path], [path, "mails"] or [path, "mails", key]."""
    raw = request.scope.get("raw_path") or request.url.path.encode()
    text = raw.decode("latin-1").split("?", 1)[0]
    parts = [urllib.parse.unquote(p) for p in text[len(BASE) + 1:].split("/")] if text.startswith(BASE + "/") else []
    if len(parts) not in shapes or not parts[0] or (len(parts) > 1 and parts[1] != "mails") or \
            (len(parts) == 3 and not parts[2]):
        raise not_found(f"{request.method} {request.url.path} can not be found")
    return parts


class _Routes:
    def __init__(self, repositories: MailRepositoryStore, tasks: TaskManager | None,
                 queues: MailQueueFactory | None, contents: MimeMessageStore | None) -> None:
        self.repositories = repositories
        self.tasks = tasks
        self.queues = queues
        self.contents = contents

    # ------------------------------------------------------------------ lookups
    def url(self, path: str) -> str:
        urls = sorted(u for u in self.repositories.urls() if repository_path(u) == path)
        if not urls:
            raise not_found(f"The repository '{encode(path)}' (decoded value: '{path}') does not exist")
        return urls[0]

    def repository(self, path: str) -> MailRepository:
        return self.repositories.select(self.url(path))

    def task_manager(self) -> TaskManager:
        if self.tasks is None:
            raise WebAdminError(404, "Tasks are not available on this server")
        return self.tasks

    # ------------------------------------------------------------------ reads
    def info(self, path: str) -> dict[str, Any]:
        return {"repository": path, "path": encode(path), "size": self.repository(path).size()}

    def keys(self, path: str, request: Request) -> list[str]:
        start = params.offset(request.query_params.get("offset"))
        count = params.limit(request.query_params.get("limit"))
        criteria = _criteria(request.query_params)
        repository = self.repository(path)
        keys = list(repository.list_keys())
        if criteria:   # each mail must be read: only when filtering
            keys = [k for k in keys if (mail := repository.retrieve(k)) is not None and all(c(mail) for c in criteria)]
        return keys[start:] if count is None else keys[start:start + count]

    def mail(self, path: str, key: str, request: Request) -> Any:
        as_eml = "message/rfc822" in request.headers.get("accept", "")
        fields = [] if as_eml else _additional_fields(request.query_params.get("additionalFields", ""))
        mail = self.repository(path).retrieve(key)
        if mail is None:
            raise not_found(f"Could not retrieve {key}")
        if as_eml:
            return Response(self.raw(mail), media_type="message/rfc822")
        return self.mail_json(mail, fields)

    def raw(self, mail: Mail) -> bytes:
        if self.contents is not None:
            return self.contents.read(mail.content)
        if mail.content.stored:
            raise WebAdminError(500, "Error while retrieving mail", "no content store is configured")
        return mail.content.data or b""

    def mail_json(self, mail: Mail, fields: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "name": mail.name, "sender": str(mail.sender) if mail.sender else None,
            "recipients": [str(r) for r in mail.recipients], "error": mail.error_message, "state": mail.state,
            "remoteHost": mail.remote_host, "remoteAddr": mail.remote_addr,
            "lastUpdated": format_date(mail.last_updated) if mail.last_updated else None}
        if "attributes" in fields:
            body["attributes"] = {k: v if isinstance(v, str) else json.dumps(v) for k, v in mail.attributes.items()}
        if "perRecipientsHeaders" in fields:
            per: dict[str, dict[str, list[str]]] = {}
            for h in mail.per_recipient_headers:
                per.setdefault(h.recipient, {}).setdefault(h.name, []).append(h.value)
            body["perRecipientsHeaders"] = per
        if "messageSize" in fields:
            body["messageSize"] = mail.content.size
        if {"headers", "textBody", "htmlBody"} & set(fields):
            raw = self.raw(mail)
            if "headers" in fields:   # the header only: email's full parser recurses once per MIME level
                message = BytesParser(policy=email.policy.default).parsebytes(raw, headersonly=True)
                headers: dict[str, list[str]] = {}
                for name, value in message.items():
                    headers.setdefault(name, []).append(str(value))
                body["headers"] = headers
            for name, subtype in (("textBody", "plain"), ("htmlBody", "html")):
                if name in fields:
                    body[name] = body_text(raw, subtype)
        return body

    # ------------------------------------------------------------------ writes
    def create(self, path: str, protocol: str | None) -> Response:
        accepted = ", ".join(self.repositories.protocols)
        if not protocol:   # James formats the missing value as null
            raise WebAdminError(400, f"'{protocol or 'null'}' is an unsupported protocol",
                                f"the 'protocol' query parameter is compulsory; accepted: {accepted}")
        if protocol not in self.repositories.protocols:
            raise WebAdminError(400, f"'{protocol}' is an unsupported protocol",
                                f"No Mail Repository associated with {protocol}; accepted: {accepted}")
        if _URL_PREFIX.match(path):
            raise bad_request(f"the repository path '{path}' starts with a protocol: give the path alone "
                              f"(var/mail/name/) and the protocol in ?protocol=")
        try:
            self.repositories.select(f"{protocol}://{path}")
        except ValueError as exc:
            raise WebAdminError(400, f"'{protocol}' is an unsupported protocol", str(exc)) from exc
        return Response(status_code=NO_CONTENT)

    def delete(self, path: str, key: str) -> Response:
        self.repository(path).remove(key)   # 204 for an unknown key too
        return Response(status_code=NO_CONTENT)

    def clear(self, path: str) -> Response:
        tasks, url = self.task_manager(), self.url(path)
        return submitted(tasks.submit(ClearMailRepositoryTask(self.repositories, url)))

    def reprocess(self, path: str, key: str | None, request: Request) -> Response:
        query = request.query_params
        params.selector(query.get("action"), "action", [REPROCESS])
        tasks = self.task_manager()
        if self.queues is None:
            raise WebAdminError(404, "Mail queues are not available on this server")
        queue = query.get("queue") or SPOOL
        processor = query.get("processor") or None
        _unsupported(query)
        count = params.limit(query.get("limit")) if key is None else None
        url = self.url(path)
        if queue not in self.queues.list_names():
            # James would create a task failing later; enqueueing into a queue nobody reads is worse.
            raise bad_request(f"Unknown mail queue '{queue}'")
        task: Task
        if key is None:
            task = ReprocessingAllMailsTask(self.repositories, self.queues, url, queue, processor, count)
        else:
            task = ReprocessingOneMailTask(self.repositories, self.queues, url, key, queue, processor)
        return submitted(tasks.submit(task))

    def move(self, path: str, key: str | None, body: bytes) -> Response:
        try:
            payload = loads(body)
        except ValueError as exc:
            raise bad_request(str(exc), "JSON payload of the request is not valid") from exc
        target = payload.get("mailRepository") if isinstance(payload, dict) else None
        if not isinstance(target, str) or not target:
            raise bad_request("'mailRepository' (the target repository path) is compulsory")
        # The target is created as PUT creates one: a path without its protocol, and printable, which every
        # later listing can show and encode (a lone surrogate, "\ud800" in the JSON body, failed each of them).
        if _URL_PREFIX.match(target):
            raise bad_request(f"the repository path '{target}' starts with a protocol: give the path alone "
                              f"(var/mail/name/)")
        if not target.isprintable():
            raise bad_request("'mailRepository' must be printable text (no control character nor lone surrogate)")
        source_url = self.url(path)
        source = self.repositories.select(source_url)
        destination = self.repositories.select(f"{source_url.split('://', 1)[0]}://{target}")
        for k in [key] if key is not None else list(source.list_keys()):
            mail = source.retrieve(k)
            if mail is not None:   # an unknown key moves nothing (204, as James)
                destination.store(mail)
                source.remove(k)
        return Response(status_code=NO_CONTENT)


def _criteria(query: Any) -> list[Callable[[Mail], bool]]:
    """The browse filters: sender / recipient (``*@domain`` allowed), remote address / host, update age."""
    criteria: list[Callable[[Mail], bool]] = []
    if (sender := query.get("sender")) is not None:
        criteria.append(lambda m: m.sender is not None and _address_matches(str(m.sender), sender))
    if (recipient := query.get("recipient")) is not None:
        criteria.append(lambda m: any(_address_matches(str(r), recipient) for r in m.recipients))
    if (address := query.get("remoteAddress")) is not None:
        criteria.append(lambda m: m.remote_addr == address)
    if (host := query.get("remoteHost")) is not None:
        criteria.append(lambda m: m.remote_host == host)
    now = datetime.now(UTC)
    for name, newer in (("updatedBefore", False), ("updatedAfter", True)):
        if (raw := query.get(name)) is not None:
            try:
                bound = params.ago(raw, "days", now)
            except ValueError as exc:
                raise bad_request(str(exc), f"Invalid '{name}' parameter") from exc
            criteria.append(_updated_after(bound) if newer else _updated_before(bound))
    return criteria


def _updated_after(bound: datetime) -> Callable[[Mail], bool]:
    return lambda m: m.last_updated is not None and m.last_updated > bound


def _updated_before(bound: datetime) -> Callable[[Mail], bool]:
    return lambda m: m.last_updated is not None and m.last_updated < bound


def _address_matches(address: str, pattern: str) -> bool:
    if pattern.startswith("*@"):
        return address.lower().endswith(pattern[1:].lower())
    return address.lower() == pattern.lower()


def _additional_fields(raw: str) -> list[str]:
    fields = []
    for name in (f.strip() for f in raw.split(",")):
        if not name:
            continue
        match = next((f for f in ADDITIONAL_FIELDS if f.lower() == name.lower()), None)
        if match is None:
            raise WebAdminError(400, f"The field '{name}' can't be requested in additionalFields parameter", name)
        fields.append(match)
    return fields


def _unsupported(query: Any) -> None:
    """Reprocessing options of James this server does not implement: refused, never silently ignored."""
    consume = query.get("consume")
    if consume is not None and consume.lower() not in ("true", "false"):
        raise bad_request(f"Invalid value supplied for 'consume': {consume}. Supported values are [true, false]")
    if consume is not None and consume.lower() == "false":
        raise bad_request("consume=false (keeping a copy in the repository) is not supported by this server")
    for name in ("maxRetries", "forRecipient"):
        if query.get(name) is not None:
            raise bad_request(f"'{name}' is not supported by this server")
