"""Cassandra connection settings, from the environment or explicit values."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_KEYSPACE = "james_keyspace"   # James's default, the one name every part uses unless told
_IDENTIFIER = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]{0,47}$")


def validate_identifier(name: str, what: str = "identifier") -> str:
    if not _IDENTIFIER.match(name or ""):
        raise ValueError(f"invalid {what} {name!r}: letters, digits and _ only, 48 characters at most")
    return name


@dataclass(frozen=True)
class CassandraConfig:
    hosts: tuple[str, ...] = ("127.0.0.1",)
    port: int = 9042
    keyspace: str = DEFAULT_KEYSPACE
    # SimpleStrategy with 1 replica locally; production: {"class": "NetworkTopologyStrategy", "dc1": 3}
    replication: Mapping[str, str | int] = field(
        default_factory=lambda: {"class": "SimpleStrategy", "replication_factor": 1})
    username: str | None = None
    password: str | None = None
    local_dc: str | None = None
    request_timeout: float = 10.0

    def __post_init__(self) -> None:
        validate_identifier(self.keyspace, "keyspace name")
        if "class" not in self.replication:
            raise ValueError("replication needs a 'class' (SimpleStrategy or NetworkTopologyStrategy)")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> CassandraConfig:
        from mailserver.settings import CassandraSettings  # here: Spark jobs import this module without it

        s = CassandraSettings.from_env(env)
        values: dict[str, Any] = {"hosts": s.hosts, "port": s.port, "keyspace": s.keyspace, "username": s.username,
                        "password": s.password, "local_dc": s.local_dc}
        if s.replication:
            # "NetworkTopologyStrategy:dc1=3,dc2=3" or "SimpleStrategy:1"
            strategy, _, spec = s.replication.partition(":")
            if strategy == "SimpleStrategy":
                values["replication"] = {"class": strategy, "replication_factor": int(spec or 1)}
            else:
                values["replication"] = {"class": strategy, **{k: int(v) for k, v in
                                                               (p.split("=") for p in spec.split(",") if p)}}
        values.update(overrides)
        return cls(**values)

    def replication_cql(self) -> str:
        parts = [f"'{k}': '{v}'" if isinstance(v, str) else f"'{k}': {v}" for k, v in self.replication.items()]
        return "{" + ", ".join(parts) + "}"
