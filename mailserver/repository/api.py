"""The mail-repository port (James's ``MailRepository`` and ``MailRepositoryStore``)."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator

from mailserver.model.mail import Mail

_URL = re.compile(r"^[a-z][a-z0-9+.-]*://[^\s]*$")


class MailRepositoryError(RuntimeError):
    pass


def validate_url(url: str) -> str:
    """``protocol://path``, e.g. ``cassandra://var/mail/error/``."""
    if not url or not _URL.match(url):
        raise ValueError(f"invalid mail repository URL {url!r}: expected protocol://path")
    return url


class MailRepository(ABC):
    url: str

    @abstractmethod
    def store(self, mail: Mail) -> str:
        """Store (or replace) ``mail`` under its name; returns the key."""

    @abstractmethod
    def list_keys(self) -> Iterator[str]: ...

    @abstractmethod
    def size(self) -> int: ...

    @abstractmethod
    def retrieve(self, key: str) -> Mail | None: ...

    @abstractmethod
    def remove(self, key: str) -> None: ...

    @abstractmethod
    def remove_all(self) -> int: ...


class MailRepositoryStore(ABC):
    @abstractmethod
    def select(self, url: str) -> MailRepository:
        """The repository at ``url``, registered on first use."""

    @abstractmethod
    def urls(self) -> list[str]: ...
