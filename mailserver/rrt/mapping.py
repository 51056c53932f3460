"""Recipient rewrite table model: mapping types, mappings and mapping sources, as James spells them.

A mapping is stored as ``prefix + value`` (James's ``Mapping.asString()``)::

    regex:<pattern>:<replacement>   domain:<domain>   domainAlias:<domain>   error:<message>
    forward:<address>   group:<address>   alias:<address>   <address>  (Address: empty prefix)

A source is ``user@domain`` where either side may be the wildcard ``*``: ``bob@d.tld`` (one
address), ``*@d.tld`` (a whole domain), ``*@*`` (everything).

Validation happens when a mapping or a source is *built from user input* (``Mapping.of``,
``Mapping.parse``, the typed constructors, ``MappingSource.of`` ...): regexes must compile,
forward/group/alias/address values must be mail addresses, domain values must be domains.
Rows *read back* from Cassandra use ``Mapping.stored`` / ``MappingSource.stored``, which do not
validate: a keyspace written by James or by an older release may hold values we would refuse
today, and reading (or repairing) must never fail on them.

Normalisation (our choice, James keeps the case of local parts): source local parts are
lower-cased like usernames, so ``Sales@d.tld`` and ``sales@d.tld`` are one source; domains are
normalised by ``Domain.of``; addresses in values keep their local part as written.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import regex

from mailserver.model.address import Domain, InvalidAddress, MailAddress

WILDCARD = "*"


class InvalidMapping(ValueError):
    pass


class MappingType(Enum):
    REGEX = "regex:"
    DOMAIN = "domain:"
    DOMAIN_ALIAS = "domainAlias:"
    ERROR = "error:"
    FORWARD = "forward:"
    GROUP = "group:"
    ALIAS = "alias:"
    ADDRESS = ""

    @property
    def prefix(self) -> str:
        return self.value

    @property
    def james_name(self) -> str:
        """The name James's webadmin uses (``Address``, ``DomainAlias`` ...)."""
        return _JAMES_NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> MappingType:
        """Parse a James type name, case-insensitively (``group``, ``DomainAlias`` ...)."""
        for member in cls:
            if member.james_name.lower() == name.strip().lower():
                return member
        raise InvalidMapping(f"unknown mapping type {name!r}; expected one of "
                             + ", ".join(m.james_name for m in cls))

    @classmethod
    def detect(cls, text: str) -> MappingType:
        """The type of a stored mapping string; no known prefix means Address."""
        for member in cls:
            if member.prefix and text.startswith(member.prefix):
                return member
        return cls.ADDRESS


_JAMES_NAMES = {MappingType.REGEX: "Regex", MappingType.DOMAIN: "Domain", MappingType.DOMAIN_ALIAS: "DomainAlias",
                MappingType.ERROR: "Error", MappingType.FORWARD: "Forward", MappingType.GROUP: "Group",
                MappingType.ALIAS: "Alias", MappingType.ADDRESS: "Address"}
ADDRESS_TYPES = frozenset({MappingType.ADDRESS, MappingType.FORWARD, MappingType.GROUP, MappingType.ALIAS})
DOMAIN_TYPES = frozenset({MappingType.DOMAIN, MappingType.DOMAIN_ALIAS})


@dataclass(frozen=True)
class Mapping:
    type: MappingType
    value: str

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def of(cls, mapping_type: MappingType, value: str) -> Mapping:
        """A validated, normalised mapping; raises InvalidMapping with the reason."""
        if not isinstance(value, str):
            raise InvalidMapping(f"{mapping_type.james_name} mapping value must be a string, got {value!r}")
        text = value.strip()
        if mapping_type in ADDRESS_TYPES:
            try:
                text = str(MailAddress.of(text))
            except InvalidAddress as exc:
                raise InvalidMapping(f"{mapping_type.james_name} mapping needs a mail address: {exc}") from exc
        elif mapping_type in DOMAIN_TYPES:
            try:
                text = Domain.of(text).name
            except InvalidAddress as exc:
                raise InvalidMapping(f"{mapping_type.james_name} mapping needs a domain: {exc}") from exc
        elif mapping_type is MappingType.REGEX:
            text = value   # spaces can be meaningful in a pattern
            split_regex(text)
        return cls(mapping_type, text)

    @classmethod
    def parse(cls, text: str) -> Mapping:
        """Validated mapping from its string form (``forward:bob@d.tld``, ``bob@d.tld`` ...)."""
        mapping_type = MappingType.detect(text)
        return cls.of(mapping_type, text[len(mapping_type.prefix):])

    @classmethod
    def stored(cls, text: str) -> Mapping:
        """Mapping read from the database, as is (no validation)."""
        mapping_type = MappingType.detect(text)
        return cls(mapping_type, text[len(mapping_type.prefix):])

    @classmethod
    def address(cls, address: MailAddress | str) -> Mapping:
        return cls.of(MappingType.ADDRESS, str(address))

    @classmethod
    def forward(cls, address: MailAddress | str) -> Mapping:
        return cls.of(MappingType.FORWARD, str(address))

    @classmethod
    def group(cls, address: MailAddress | str) -> Mapping:
        return cls.of(MappingType.GROUP, str(address))

    @classmethod
    def alias(cls, address: MailAddress | str) -> Mapping:
        return cls.of(MappingType.ALIAS, str(address))

    @classmethod
    def domain(cls, domain: Domain | str) -> Mapping:
        return cls.of(MappingType.DOMAIN, str(domain))

    @classmethod
    def domain_alias(cls, domain: Domain | str) -> Mapping:
        return cls.of(MappingType.DOMAIN_ALIAS, str(domain))

    @classmethod
    def regex(cls, regex: str) -> Mapping:
        """``<pattern>:<replacement>``, e.g. ``(.*)@old\\.tld:${1}@new.tld``."""
        return cls.of(MappingType.REGEX, regex)

    @classmethod
    def error(cls, message: str) -> Mapping:
        return cls.of(MappingType.ERROR, message)

    # -- views ----------------------------------------------------------------------------------
    def as_string(self) -> str:
        return self.type.prefix + self.value

    def validated(self) -> Mapping:
        return Mapping.of(self.type, self.value)

    def as_mail_address(self) -> MailAddress | None:
        """The target address of an Address/Forward/Group/Alias mapping (None otherwise or if invalid)."""
        if self.type not in ADDRESS_TYPES:
            return None
        try:
            return MailAddress.of(self.value)
        except InvalidAddress:
            return None

    def __str__(self) -> str:
        return self.as_string()


def split_regex(value: str) -> tuple[regex.Pattern[str], str]:
    """``<pattern>:<replacement>`` -> (compiled pattern, replacement); raises InvalidMapping.

    James splits on ``:`` and wants exactly three parts (``regex``, pattern, replacement); we
    split on the *last* colon, which reads every value James accepts and also lets a pattern use
    ``(?:...)``. The pattern must match the whole address (Java's ``matches()``, our
    ``fullmatch``).
    """
    pattern, sep, replacement = value.rpartition(":")
    if not sep or not pattern or not replacement:
        raise InvalidMapping(f"regex mapping must be <pattern>:<replacement>, e.g. "
                             f"'(.*)@old\\.tld:${{1}}@new.tld'; got {value!r}")
    try:
        # The ``regex`` module, not ``re``: the same syntax, and a match can be given a time limit
        # (an administrator's pattern such as ``(a+)+b`` backtracks exponentially on some addresses).
        return regex.compile(pattern), replacement
    except regex.error as exc:
        raise InvalidMapping(f"invalid regex {pattern!r} in mapping {value!r}: {exc}") from exc


@dataclass(frozen=True, order=True)
class MappingSource:
    user: str     # local part, or ``*``
    domain: str   # domain name, or ``*``

    @classmethod
    def of(cls, user: str, domain: Domain | str) -> MappingSource:
        """Validated source; ``*`` is allowed on either side."""
        user = (user or "").strip()
        if not user:
            raise InvalidAddress("mapping source user must not be empty (use '*' for a whole domain)")
        if user != WILDCARD:
            if "@" in user or any(c.isspace() for c in user):
                raise InvalidAddress(f"invalid mapping source user {user!r}")
            user = user.lower()
        domain_name = domain.name if isinstance(domain, Domain) else (domain or "").strip()
        if domain_name != WILDCARD:
            domain_name = Domain.of(domain_name).name
        if user != WILDCARD and domain_name != WILDCARD:
            MailAddress.of(f"{user}@{domain_name}")   # the local part must be a valid one
        return cls(user, domain_name)

    @classmethod
    def from_address(cls, address: MailAddress | str) -> MappingSource:
        mail = address if isinstance(address, MailAddress) else MailAddress.of(address)
        return cls(mail.local_part.lower(), mail.domain.name)

    @classmethod
    def from_domain(cls, domain: Domain | str) -> MappingSource:
        """``*@domain``: every address of the domain."""
        return cls.of(WILDCARD, domain)

    @classmethod
    def wildcard(cls) -> MappingSource:
        return cls(WILDCARD, WILDCARD)

    @classmethod
    def parse(cls, text: str) -> MappingSource:
        """Validated source from ``user@domain`` or a bare domain (``d.tld`` means ``*@d.tld``)."""
        user, sep, domain = (text or "").strip().rpartition("@")
        return cls.of(user, domain) if sep else cls.from_domain(domain)

    @classmethod
    def stored(cls, text: str) -> MappingSource:
        """Source read from ``mappings_sources.source``, as is."""
        user, _, domain = text.rpartition("@")
        return cls(user, domain)

    def as_string(self) -> str:
        return f"{self.user}@{self.domain}"

    @property
    def is_domain(self) -> bool:
        return self.user == WILDCARD and self.domain != WILDCARD

    def as_mail_address(self) -> MailAddress | None:
        if WILDCARD in (self.user, self.domain):
            return None
        try:
            return MailAddress.of(self.as_string())
        except InvalidAddress:
            return None

    def domain_part(self) -> Domain | None:
        return None if self.domain == WILDCARD else Domain(self.domain)

    def __str__(self) -> str:
        return self.as_string()


def as_source(source: MappingSource | MailAddress | str) -> MappingSource:
    if isinstance(source, MappingSource):
        return source
    if isinstance(source, MailAddress):
        return MappingSource.from_address(source)
    return MappingSource.parse(source)
