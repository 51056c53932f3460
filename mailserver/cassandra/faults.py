"""The fault seam: make a chosen Cassandra write fail, the way a node timeout does in production.

Tests arm a rule (by table and statement kind, optionally a CQL fragment); the next matching
statement executed through ``CassandraSession`` raises ``InjectedWriteFailure`` *instead of*
reaching Cassandra. Every inconsistency of the operator guide (mailbox vs path, imapUid vs
messageId, counters, quotas, fast view, rrt vs mappings_sources) is a write that failed between
two others; this seam produces exactly that, through the production code paths.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

_TARGET = re.compile(
    r"^\s*(?:(INSERT)\s+INTO|(UPDATE)|(DELETE)\b.*?\bFROM|(TRUNCATE)(?:\s+TABLE)?)\s+"
    r"(?:\"?[\w]+\"?\.)?\"?(\w+)\"?", re.IGNORECASE | re.DOTALL)


class InjectedWriteFailure(RuntimeError):
    """Raised in place of a write the test asked to fail."""


def statement_target(cql: str) -> tuple[str, str] | None:
    """(KIND, table lower-cased) of a write statement, or None for reads and DDL."""
    m = _TARGET.match(cql)
    if not m:
        return None
    kind = next(g for g in m.groups()[:4] if g)
    return kind.upper(), m.group(5).lower()


@dataclass
class FaultRule:
    table: str
    kind: str | None = None          # INSERT / UPDATE / DELETE / TRUNCATE, None = any write
    contains: str | None = None      # extra CQL fragment to match (e.g. a column name)
    times: int = 1                   # how many matching statements fail
    hits: int = field(default=0)

    def matches(self, cql: str) -> bool:
        target = statement_target(cql)
        if target is None or target[1] != self.table.lower():
            return False
        if self.kind and target[0] != self.kind.upper():
            return False
        return self.contains is None or self.contains.lower() in cql.lower()


class FaultInjector:
    def __init__(self) -> None:
        self._rules: list[FaultRule] = []
        self._lock = threading.Lock()

    def fail(self, table: str, kind: str | None = None, contains: str | None = None, times: int = 1) -> FaultRule:
        rule = FaultRule(table=table, kind=kind, contains=contains, times=times)
        with self._lock:
            self._rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def check(self, cql: str) -> None:
        if not self._rules:   # every statement passes here: no lock when nothing is armed
            return
        with self._lock:
            for rule in self._rules:
                if rule.hits < rule.times and rule.matches(cql):
                    rule.hits += 1
                    raise InjectedWriteFailure(f"injected failure of {cql.split()[0]} on {rule.table}")
