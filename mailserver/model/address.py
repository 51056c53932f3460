"""Usernames, domains and mail addresses with James's normalisation (lower-cased, validated)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_DOMAIN_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_LOCAL_PART = re.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}$")
_IPV4_LITERAL = re.compile(r"^\[\d{1,3}(\.\d{1,3}){3}\]$")


class InvalidAddress(ValueError):
    pass


@dataclass(frozen=True, order=True)
class Domain:
    name: str

    @classmethod
    def of(cls, raw: str) -> Domain:
        if raw is None:
            raise InvalidAddress("domain must not be empty")
        name = raw.strip().lower().rstrip(".")
        if not name:
            raise InvalidAddress("domain must not be empty")
        if len(name) > 253:
            raise InvalidAddress(f"domain too long ({len(name)} > 253): {raw!r}")
        if _IPV4_LITERAL.match(name):
            return cls(name)
        try:
            ascii_name = name.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise InvalidAddress(f"invalid domain {raw!r}: {exc}") from exc
        labels = ascii_name.split(".")
        bad = [label for label in labels if not _DOMAIN_LABEL.match(label)]
        if bad:
            raise InvalidAddress(f"invalid domain {raw!r}: bad label {bad[0]!r}")
        return cls(ascii_name)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, order=True)
class MailAddress:
    local_part: str
    domain: Domain

    @classmethod
    def of(cls, raw: str) -> MailAddress:
        if not raw or "@" not in raw:
            raise InvalidAddress(f"not a mail address (missing '@'): {raw!r}")
        text = raw.strip()
        if text.startswith("<") and text.endswith(">"):
            text = text[1:-1]
        local, _, domain = text.rpartition("@")
        if not _LOCAL_PART.match(local) or local.startswith(".") or local.endswith(".") or ".." in local:
            raise InvalidAddress(f"invalid local part in {raw!r}")
        return cls(local, Domain.of(domain))

    def __str__(self) -> str:
        return f"{self.local_part}@{self.domain}"


@dataclass(frozen=True, order=True)
class Username:
    """A user login, lower-cased as James stores it. Virtual hosting: ``local@domain``."""

    value: str

    @classmethod
    def of(cls, raw: str) -> Username:
        if raw is None or not raw.strip():
            raise InvalidAddress("username must not be empty")
        text = raw.strip().lower()
        if len(text) > 255:
            raise InvalidAddress("username too long (> 255)")
        if any(c.isspace() for c in text) or "/" in text:
            raise InvalidAddress(f"invalid username {raw!r}: no spaces or '/' allowed")
        if text.count("@") > 1:
            raise InvalidAddress(f"invalid username {raw!r}: more than one '@'")
        if "@" in text:
            local, domain = text.split("@")
            if not local:
                raise InvalidAddress(f"invalid username {raw!r}: empty local part")
            Domain.of(domain)
        return cls(text)

    @property
    def local_part(self) -> str:
        return self.value.split("@", 1)[0]

    @property
    def domain(self) -> Domain | None:
        return Domain.of(self.value.split("@", 1)[1]) if "@" in self.value else None

    def as_mail_address(self) -> MailAddress:
        return MailAddress.of(self.value)

    def __str__(self) -> str:
        return self.value
