"""The mail-repository port (James's ``MailRepository`` and ``MailRepositoryStore``)."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator

from mailserver.model.mail import Mail, MailContent

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
    def remove(self, key: str, *, delete_content: bool = True) -> None:
        """Remove the entry and, unless ``delete_content`` is false, its content's blobs (a no-op when the
        blob store deduplicates). ``delete_content=False``: the caller takes the blobs over and gives them
        back to ``delete_content`` when done (a mail reprocessed in this thread)."""

    def delete_content(self, content: MailContent) -> None:  # noqa: B027 - repositories without blobs
        """Delete blobs a ``remove(key, delete_content=False)`` handed over."""

    @abstractmethod
    def remove_all(self) -> int: ...


class MailRepositoryStore(ABC):
    # The protocols of the URLs this store keeps (James's mailrepositorystore.xml <protocols>): what
    # WebAdmin accepts when an admin creates a repository.
    protocols: tuple[str, ...] = ()

    @abstractmethod
    def select(self, url: str) -> MailRepository:
        """The repository at ``url``, registered on first use."""

    @abstractmethod
    def urls(self) -> list[str]: ...
