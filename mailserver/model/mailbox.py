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
FORBIDDEN_CHARACTERS = "%*\r\n"   # James's MailboxPath.INVALID_CHARS


class InvalidMailboxName(ValueError):
    pass


def _unsafe(char: str) -> bool:
    """A C0 control character, DEL, or a lone surrogate (what invalid UTF-8 decodes to with surrogateescape).

    James lets these through; they break every protocol that shows the name (an IMAP line, a
    log line, a JSON export) and no client can type them, so no mailbox is named with one.
    """
    code = ord(char)
    return code < 0x20 or code == 0x7F or 0xD800 <= code <= 0xDFFF


def printable(text: str) -> str:
    """``text`` with every unsafe character written as a Python escape (``a\\x00b``): safe in one line."""
    if not any(_unsafe(c) for c in text):
        return text
    return "".join(repr(c)[1:-1] if _unsafe(c) else c for c in text)


def _control_character_message(shown: str) -> str:
    return f"{printable(shown)} contains a control character (U+0000 to U+001F, U+007F) or invalid UTF-8"


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
        if any(c in name for c in FORBIDDEN_CHARACTERS):
            raise InvalidMailboxName(f"mailbox name {name!r} contains a wildcard or a line break")
        if any(_unsafe(c) for c in name):
            raise InvalidMailboxName(_control_character_message(f"mailbox name {name!r}"))
        parts = name.split(DELIMITER)
        if any(p == "" for p in parts):
            raise InvalidMailboxName(f"mailbox name {name!r} has an empty hierarchy level")
        if parts[0].upper() == INBOX:  # INBOX is case-insensitive (RFC 3501)
            name = DELIMITER.join([INBOX, *parts[1:]])
        return cls(namespace, u, name)

    def assert_acceptable(self) -> MailboxPath:
        """James's ``MailboxPath.assertAcceptable``, with its messages, before a mailbox gets this name.

        In James's order: no empty hierarchy level (blanks ignored), none of ``%*`` CR LF and
        no leading ``#``, at most 200 characters; and, beyond James, no control character nor
        invalid UTF-8 (``_unsafe``). Paths read back from storage are not checked: a name
        stored before a rule existed must stay reachable.
        """
        compact = "".join(self.name.split())
        if not compact or DELIMITER * 2 in compact or compact.startswith(DELIMITER) or compact.endswith(DELIMITER):
            raise InvalidMailboxName(f"'{self.as_string()}' has an empty part within its mailbox name considering "
                                     f"{DELIMITER} as a delimiter")
        if any(c in self.name for c in FORBIDDEN_CHARACTERS) or self.name.startswith("#"):
            raise InvalidMailboxName(f"{self.as_string()} contains one of the forbidden characters "
                                     f"{FORBIDDEN_CHARACTERS} or starts with #")
        if any(_unsafe(c) for c in self.name):
            raise InvalidMailboxName(_control_character_message(self.as_string()))
        if len(self.name) > MAX_NAME_LENGTH:
            raise InvalidMailboxName(f"Mailbox name exceeds maximum size of {MAX_NAME_LENGTH} characters")
        return self

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
