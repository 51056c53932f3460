"""Memory mail repositories (unit tests)."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator

from mailserver.model.mail import Mail
from mailserver.repository.api import MailRepository, MailRepositoryStore, validate_url


class MemoryMailRepository(MailRepository):
    def __init__(self, url: str) -> None:
        self.url = validate_url(url)
        self._mails: dict[str, Mail] = {}
        self._lock = threading.Lock()

    def store(self, mail: Mail) -> str:
        stored = copy.copy(mail)
        stored.attributes = mail.serializable_attributes()  # what survives storage, as on Cassandra
        with self._lock:
            self._mails[mail.name] = stored
        return mail.name

    def list_keys(self) -> Iterator[str]:
        return iter(sorted(self._mails))

    def size(self) -> int:
        return len(self._mails)

    def retrieve(self, key: str) -> Mail | None:
        mail = self._mails.get(key)
        return copy.deepcopy(mail) if mail else None

    def remove(self, key: str, *, delete_content: bool = True) -> None:
        with self._lock:   # contents live in the mail objects: nothing else to delete
            self._mails.pop(key, None)

    def remove_all(self) -> int:
        with self._lock:
            count = len(self._mails)
            self._mails.clear()
            return count


class MemoryMailRepositoryStore(MailRepositoryStore):
    protocols = ("cassandra", "memory")   # James's memory protocol, and the stand-in for the Cassandra store

    def __init__(self) -> None:
        self._repositories: dict[str, MemoryMailRepository] = {}

    def select(self, url: str) -> MailRepository:
        validate_url(url)
        return self._repositories.setdefault(url, MemoryMailRepository(url))

    def urls(self) -> list[str]:
        return sorted(self._repositories)
