"""James's ``DropList`` port and its entries (``org.apache.james.droplists.api``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import StrEnum

from mailserver.model.address import MailAddress


class OwnerScope(StrEnum):
    """Stored as the upper-case name, as James's enum ``name()``."""
    GLOBAL = "GLOBAL"
    DOMAIN = "DOMAIN"
    USER = "USER"


class DeniedEntityType(StrEnum):
    DOMAIN = "DOMAIN"
    ADDRESS = "ADDRESS"


@dataclass(frozen=True)
class DropListEntry:
    owner_scope: OwnerScope
    owner: str                 # "" for the global scope, a domain or a user's address otherwise
    denied_entity_type: DeniedEntityType
    denied_entity: str         # a domain or a mail address, as James writes them


class DropList(ABC):
    @abstractmethod
    def add(self, entry: DropListEntry) -> None: ...

    @abstractmethod
    def remove(self, entry: DropListEntry) -> None: ...

    @abstractmethod
    def list(self, scope: OwnerScope, owner: str) -> list[DropListEntry]: ...

    @abstractmethod
    def blocks(self, scope: OwnerScope, owner: str, sender: MailAddress) -> bool:
        """True when the sender's address or its domain is denied for this owner (James's
        ``query`` = BLOCKED; the global scope matches whatever the owner)."""


def denied_forms(sender: MailAddress) -> tuple[str, str]:
    """What an entry must hold to deny ``sender``: its address, or its domain."""
    return str(sender), sender.domain.name
