"""Mailbox ACLs (RFC 4314) with James's entry-key syntax: ``[-][$]name`` (negative, group)."""

from __future__ import annotations

import re
from collections.abc import Mapping

RIGHTS = "lrswipkxtea"  # RFC 4314 right letters James stores one per set element in aclv2
_KEY = re.compile(r"^-?\$?[^\s$-][^\s]{0,254}$")


class InvalidAcl(ValueError):
    pass


def validate_key(key: str) -> str:
    if not key or not _KEY.match(key):
        raise InvalidAcl(f"invalid ACL entry key {key!r}: expected [-][$]name")
    return key


def validate_rights(rights: str) -> str:
    unknown = sorted(set(rights) - set(RIGHTS))
    if unknown:
        raise InvalidAcl(f"unknown right(s) {''.join(unknown)!r}; allowed: {RIGHTS}")
    return "".join(r for r in RIGHTS if r in rights)  # canonical order, no duplicates


def is_positive_user_entry(key: str) -> bool:
    return not key.startswith(("-", "$"))


def diff(old: Mapping[str, str], new: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(entries added or changed with their new rights, entries removed or changed with their old rights)."""
    added = {k: v for k, v in new.items() if old.get(k) != v}
    removed = {k: v for k, v in old.items() if new.get(k) != v}
    return added, removed
