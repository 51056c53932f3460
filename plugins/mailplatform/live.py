"""Params checked against the live system, for ``check_params``: does the user, mailbox, queue, repository,
dead-letter group exist? Through WebAdmin (James's routes), and Cassandra for mailbox ids (James has no
route that finds a mailbox by id alone). Nothing is opened until a rule asks.
"""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from mailplatform.hooks.webadmin import DEFAULT_CONN_ID, WebAdminHook, raise_for_status
from mailplatform.param_checks import ParamError, Rule

NOT_FOUND = 404


class Lookups:
    """What exists on the server; a context manager that closes the client it opened."""

    def __init__(self, webadmin_conn_id: str = DEFAULT_CONN_ID, cassandra_conn_id: str = "cassandra_default") -> None:
        self.webadmin_conn_id = webadmin_conn_id
        self.cassandra_conn_id = cassandra_conn_id
        self._webadmin: WebAdminHook | None = None

    def __enter__(self) -> Lookups:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._webadmin is not None:
            self._webadmin.close()

    def _get(self, path: str, *, head: bool = False) -> Any:
        """The answer's JSON (True for an empty 2xx), None on 404; other errors raise."""
        if self._webadmin is None:
            self._webadmin = WebAdminHook(self.webadmin_conn_id)
        response = self._webadmin.get_conn().request("HEAD" if head else "GET", path)
        if response.status_code == NOT_FOUND:
            return None
        raise_for_status(response)
        return response.json() if response.content else True

    def user_exists(self, user: str) -> bool:
        return self._get("/users/" + urllib.parse.quote(user, safe=""), head=True) is not None

    def domain_exists(self, domain: str) -> bool:
        return self._get("/domains/" + urllib.parse.quote(domain, safe="")) is not None

    def mail_queues(self) -> list[str]:
        return list(self._get("/mailQueues") or [])

    def repository_exists(self, url: str) -> bool:
        path = url.split("://", 1)[-1]
        return self._get("/mailRepositories/" + urllib.parse.quote(path, safe="")) is not None

    def dead_letter_groups(self) -> list[str]:
        return list(self._get("/events/deadLetter/groups") or [])

    def dead_letter_exists(self, group: str, insertion_id: str) -> bool:
        return self._get(f"/events/deadLetter/groups/{urllib.parse.quote(group, safe='')}/{insertion_id}") is not None

    def owns_mailboxes(self, user: str) -> bool:
        """Mailboxes of ``user`` exist (in ``mailboxPathV3``, their truth) whether the user does or not."""
        from mailplatform.hooks.cassandra import CassandraHook

        with CassandraHook(self.cassandra_conn_id).session() as session:
            query = session.prepare("SELECT mailboxName FROM mailboxPathV3 WHERE namespace = ? AND user = ? LIMIT 1")
            return session.execute(query, ("#private", user)).one() is not None

    def missing_mailbox_ids(self, ids: list[str]) -> list[str]:
        from mailplatform.hooks.cassandra import CassandraHook

        with CassandraHook(self.cassandra_conn_id).session() as session:
            query = session.prepare("SELECT id FROM mailbox WHERE id = ?")
            return [i for i in ids if session.execute(query, (uuid.UUID(i),)).one() is None]


def user_exists(name: str = "user", or_owns_mailboxes: bool = True) -> Rule:
    """The user exists or, by default, still owns mailboxes: the data a repair is about outlives a
    user removed from the repository (or one James's users never held, an LDAP user gone)."""
    def rule(params: Mapping[str, Any], lookups: Lookups) -> None:
        user = params.get(name)
        if not user or lookups.user_exists(user):
            return
        if or_owns_mailboxes and lookups.owns_mailboxes(user):
            return
        domain = user.rpartition("@")[2] if "@" in user else None
        where = "" if domain is None else (f" ({domain} is a domain of this server)" if lookups.domain_exists(domain)
                                           else f" ({domain} is not even a domain of this server)")
        mailboxes = ", nor any mailbox of theirs" if or_owns_mailboxes else ""
        raise ParamError(name, f"no user {user}{mailboxes}{where}")
    return rule


def mailboxes_exist(name: str) -> Rule:
    def rule(params: Mapping[str, Any], lookups: Lookups) -> None:
        value = params.get(name)
        ids = [value] if isinstance(value, str) else list(value or [])
        missing = lookups.missing_mailbox_ids(ids) if ids else []
        if missing:
            raise ParamError(name, f"no mailbox with id {', '.join(missing)}")
    return rule


def mail_queue_exists(name: str) -> Rule:
    def rule(params: Mapping[str, Any], lookups: Lookups) -> None:
        queue = params.get(name)
        if not queue:
            return
        queues = lookups.mail_queues()
        # A WebAdmin without the spooler role in its process knows no queue at all: nothing to
        # check against, rather than a refusal of every queue.
        if queues and queue not in queues:
            raise ParamError(name, f"no mail queue {queue} (the queues: {', '.join(sorted(queues)) or 'none'})")
    return rule


def repository_exists(name: str) -> Rule:
    def rule(params: Mapping[str, Any], lookups: Lookups) -> None:
        url = params.get(name)
        if url and not lookups.repository_exists(url):
            raise ParamError(name, f"no mail repository {url}")
    return rule


def dead_letters_exist(group_param: str = "group", id_param: str = "insertion_id") -> Rule:
    """The group holds dead letters; the insertion id (when given) is one of them."""
    def rule(params: Mapping[str, Any], lookups: Lookups) -> None:
        group, insertion_id = params.get(group_param), params.get(id_param)
        if not group:
            return
        if insertion_id:
            if not lookups.dead_letter_exists(group, insertion_id):
                raise ParamError(id_param, f"no dead letter {insertion_id} in the group {group}")
            return
        groups = lookups.dead_letter_groups()
        if group not in groups:
            raise ParamError(group_param, f"the group {group} holds no dead letters "
                                          f"(groups holding some: {', '.join(groups) or 'none'})")
    return rule
