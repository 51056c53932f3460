"""The process: its roles, its name, its event loop, its health probes and its read caches."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from mailserver.serving.event_loops import DEFAULT_EVENT_LOOP, EVENT_LOOP_NAMES

from .base import EnvironmentSettings, setting
from .values import Milliseconds, one_of

ROLES = ("smtp", "spooler", "outgoing", "webadmin", "tasks", "listeners", "imap")
# Roles a process runs only when named (not yet part of every role).
OPTIONAL_ROLES = ("jmap",)
KNOWN_ROLES = ROLES + OPTIONAL_ROLES
CACHE = "duration (bare number: ms; 0: no cache)"


class NodeSettings(EnvironmentSettings):
    roles: str = setting("MAILSERVER_ROLES", ",".join(ROLES), "Roles this process runs (`serve --roles` wins).",
                         "comma list of " + ", ".join(KNOWN_ROLES))
    node_name: str | None = setting("MAILSERVER_NODE_NAME", None, "This process's name in tasks and logs; it must "
                                    "differ between live processes.", "text", shown_default="the host name")
    health_interval: Milliseconds = setting("MAILSERVER_HEALTH_INTERVAL_MS", timedelta(seconds=2), "Time between "
                                            "background probes of the backends.", "duration (bare number: ms)")
    event_loop: Annotated[str, one_of(*EVENT_LOOP_NAMES)] = setting(
        "MAILSERVER_EVENT_LOOP", DEFAULT_EVENT_LOOP, "Event loop of the SMTP and IMAP servers.",
        "one of " + ", ".join(EVENT_LOOP_NAMES))


class ReadCacheSettings(EnvironmentSettings):
    """Caches of what is read several times per mail and rarely changes."""

    domain_list: Milliseconds = setting("MAILSERVER_DOMAINLIST_READ_CACHE_MS", timedelta(seconds=10), "Domain list "
                                        "cache (James's read.cache.expiracy).", CACHE)
    quota_limits: Milliseconds = setting("MAILSERVER_QUOTA_LIMITS_READ_CACHE_MS", timedelta(seconds=10), "Quota "
                                         "limits cache (ours).", CACHE)
    users: Milliseconds = setting("MAILSERVER_USERS_READ_CACHE_MS", timedelta(seconds=10), "Which users exist "
                                  "(ours).", CACHE)
    rrt: Milliseconds = setting("MAILSERVER_RRT_READ_CACHE_MS", timedelta(seconds=10), "Recipient rewrite "
                                "mappings (ours).", CACHE)
