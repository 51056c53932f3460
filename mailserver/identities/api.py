"""James's ``Identity``, ``EmailAddress`` and ``CustomIdentityDAO`` (``org.apache.james.jmap.api``)."""

from __future__ import annotations

import hashlib
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass

from mailserver.model.address import MailAddress, Username

DEFAULT_SORT_ORDER = 100   # James's Identity.DEFAULT_SORTORDER


@dataclass(frozen=True)
class EmailAddress:
    email: str
    name: str | None = None


@dataclass(frozen=True)
class Identity:
    id: uuid.UUID
    email: str
    name: str = ""
    reply_to: tuple[EmailAddress, ...] | None = None
    bcc: tuple[EmailAddress, ...] | None = None
    text_signature: str = ""
    html_signature: str = ""
    may_delete: bool = True
    sort_order: int = DEFAULT_SORT_ORDER


def server_set_id(address: MailAddress) -> uuid.UUID:
    """Java's ``UUID.nameUUIDFromBytes`` of the address: an MD5 name-based (version 3) UUID."""
    return uuid.UUID(bytes=hashlib.md5(str(address).encode(), usedforsecurity=False).digest(), version=3)


def server_set(address: MailAddress) -> Identity:
    """James's ``DefaultIdentitySupplier``: named after its address, not deletable."""
    return Identity(server_set_id(address), str(address), name=str(address), may_delete=False)


class CustomIdentityStore(ABC):
    """The stored identities of each user (James's ``CustomIdentityDAO``); ``save`` is an upsert."""

    @abstractmethod
    def list(self, user: Username) -> list[Identity]: ...

    @abstractmethod
    def find(self, user: Username, identity_id: uuid.UUID) -> Identity | None: ...

    @abstractmethod
    def save(self, user: Username, identity: Identity) -> None: ...

    @abstractmethod
    def delete(self, user: Username, ids: Iterable[uuid.UUID]) -> None: ...
