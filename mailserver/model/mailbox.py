"""Mailbox paths and mailboxes (``#private:user:name``, '.' as hierarchy delimiter like James)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mailserver.model.address import Username
from mailserver.model.ids import MailboxId
from mailserver.model.jsonvalues import Fields

PRIVATE_NAMESPACE = "#private"
DELIMITER = "."
INBOX = "INBOX"
MAX_NAME_LENGTH = 200


class InvalidMailboxName(ValueError):
    pass


@dataclass(frozen=True, order=True)
class MailboxPath:
    namespace: str
    user: Username
    name: str

    @classmethod
    def of(cls, user: Username | str, name: str, namespace: str = PRIVATE_NAMESPACE) -> MailboxPath:
        u = user if isinstance(user, Username) else Username.of(user)
        if name is None or not name.strip():
            raise InvalidMailboxName("mailbox name must not be empty")
        if len(name) > MAX_NAME_LENGTH:
            raise InvalidMailboxName(f"mailbox name too long ({len(name)} > {MAX_NAME_LENGTH})")
        if any(c in name for c in "%*\r\n"):
            raise InvalidMailboxName(f"mailbox name {name!r} contains a wildcard or a line break")
        parts = name.split(DELIMITER)
        if any(p == "" for p in parts):
            raise InvalidMailboxName(f"mailbox name {name!r} has an empty hierarchy level")
        if parts[0].upper() == INBOX:  # INBOX is case-insensitive (RFC 3501)
            name = DELIMITER.join([INBOX, *parts[1:]])
        return cls(namespace, u, name)

    @classmethod
    def inbox(cls, user: Username | str) -> MailboxPath:
        return cls.of(user, INBOX)

    def child(self, name: str) -> MailboxPath:
        return MailboxPath.of(self.user, f"{self.name}{DELIMITER}{name}", self.namespace)

    def is_descendant_of(self, other: MailboxPath) -> bool:
        return (self.namespace, self.user) == (other.namespace, other.user) and \
            self.name.startswith(other.name + DELIMITER)

    def parents(self) -> list[MailboxPath]:
        parts = self.name.split(DELIMITER)
        return [MailboxPath(self.namespace, self.user, DELIMITER.join(parts[:i])) for i in range(1, len(parts))]

    def renamed_under(self, old_root: MailboxPath, new_root: MailboxPath) -> MailboxPath:
        """This path moved along with an ancestor renamed from ``old_root`` to ``new_root``."""
        suffix = self.name[len(old_root.name):]
        return MailboxPath(new_root.namespace, new_root.user, new_root.name + suffix)

    def as_string(self) -> str:
        """James's task-report form: ``namespace:user:name``."""
        return f"{self.namespace}:{self.user}:{self.name}"

    def to_json(self) -> dict[str, str]:
        return {"namespace": self.namespace, "user": str(self.user), "name": self.name}

    @classmethod
    def from_json(cls, data: Any, where: str = "path") -> MailboxPath:
        """James's ``{namespace, user, name}``; an absent or empty namespace is ``#private`` as in James.

        The name is taken as it is (no validation): it names a mailbox that already exists.
        """
        fields = Fields(data, where)
        namespace = fields.text("namespace", "") or PRIVATE_NAMESPACE
        return cls(namespace, Username.of(fields.text("user")), fields.text("name"))

    def __str__(self) -> str:
        return self.as_string()


@dataclass(frozen=True)
class Mailbox:
    id: MailboxId
    path: MailboxPath
    uid_validity: int
