"""The listener groups other nodes run: where a first delivery this node takes must be handed on.

Since JAMES-3599 a first delivery goes to one shared queue, and whichever node takes it runs the
groups *it* registered (James's ``GroupRegistrationHandler``); a group that node does not run
never sees the event. James assumes every node runs the same groups. In a cluster where James
nodes run groups ours do not (or our nodes run different groups), our node hands each event on to
every such group's retry exchange with ``retry-count`` 0, before it acknowledges: the group's own
queue then holds it for whichever node runs that group (James's ``GroupRegistration`` runs a
count-0 delivery at once).

Peer groups are the groups bound in RabbitMQ (a group's queue bound to its retry exchange: James
binds it when it registers the group; read through the management API when configured) and the
required groups (the aggregate our nodes write), read again at most every ``ttl`` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

GroupSource = Callable[[], frozenset[str]]


class PeerGroups:
    def __init__(self, required: GroupSource, bound: GroupSource | None = None, *, ttl: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sources = [s for s in (required, bound) if s is not None]
        self.ttl = ttl
        self.clock = clock
        self._lock = threading.Lock()
        self._groups: frozenset[str] = frozenset()
        self._read_at: float | None = None

    def __call__(self) -> frozenset[str]:
        with self._lock:
            if self._read_at is None or self.clock() - self._read_at >= self.ttl:
                self._groups = self._read()
                self._read_at = self.clock()
            return self._groups

    def _read(self) -> frozenset[str]:
        groups: set[str] = set()
        for source in self.sources:
            try:
                groups |= source()
            except Exception as exc:   # keep handing on to the groups known before: losing them loses events
                log.warning("peer listener groups could not be read (%s): keeping those known before", exc)
                groups |= self._groups
        return frozenset(groups)
