"""User names and domains an admin creates: checked before they are stored, normalised as James does.

``Username.of`` / ``Domain.of`` (the model) normalise (lower case, IDNA) and quietly accept or
repair what an account or a domain must never be named: NUL and other control characters,
fullwidth or other compatibility forms (IDNA folds a fullwidth ``example.com`` into the ASCII one),
a trailing dot. Names that reach storage through WebAdmin go through here first:

* **every name**: not empty; no control, format, private-use, unassigned or surrogate code
  point and no white space; stable under Unicode NFKC (no fullwidth or compatibility form);
* **domain** (James's ``org.apache.james.core.Domain``): at most 253 characters; labels
  separated by single dots (no empty label, so no leading, trailing or doubled dot), each of
  letters, digits, ``-`` and ``_``, neither starting nor ending with ``-`` or ``_``, at most 63
  characters, a Unicode label unchanged by IDNA 2003's mapping (``straße`` is not ``strasse``
  under IDNA 2008); then ``Domain.of`` (lower case, IDNA, its label check);
* **user name** (James's ``Username`` and ``UsersRepositoryImpl``): at most 255 characters, one
  ``@`` at most; a local part of at most 64 characters (RFC 5321 4.5.3.1.1) without any of
  James's forbidden ``"(),:; <>@[\\]`` (nor ``/``, which WebAdmin paths cannot carry); the domain
  part as above and spelled as the domain is stored (``bücher.example`` ->
  ``xn--bcher-kva.example``, what SMTP looks up); then ``Username.of`` (lower case).
* **mail address** stored in the recipient rewrite table (alias sources, group addresses and
  members, forward and address-mapping targets): as a user name with a domain part, then
  ``MailAddress.of``; a **mapping source** (``user@domain``, ``*@domain`` or a bare domain)
  likewise, ``*`` allowed on either side; a **regex or error mapping** value: no control,
  format or private-use code point (spaces stay allowed, a pattern may need them).

Lookups and deletions keep the lenient parsers, so a name stored before these rules can still
be found and removed.
"""

from __future__ import annotations

import unicodedata

from mailserver.model.address import Domain, InvalidAddress, MailAddress, Username
from mailserver.rrt.mapping import (
    ADDRESS_TYPES,
    DOMAIN_TYPES,
    WILDCARD,
    InvalidMapping,
    Mapping,
    MappingSource,
    MappingType,
)

MAX_USERNAME = 255        # James's Username.MAXIMUM_MAIL_ADDRESS_LENGTH
MAX_LOCAL_PART = 64       # RFC 5321 4.5.3.1.1
MAX_DOMAIN = 253          # James's Domain.MAXIMUM_DOMAIN_LENGTH
MAX_LABEL = 63
ILLEGAL_LOCAL_PART = frozenset('"(),:; <>@[\\]/')
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_LABEL_EDGES = "-_"


class InvalidName(InvalidAddress):
    """A name WebAdmin refuses to store (the route answers 400 with this message as details)."""


def check_text(raw: str, what: str) -> None:
    """Not empty, no control or invisible code point, no white space, NFKC-stable."""
    if not raw:
        raise InvalidName(f"{what} must not be empty")
    check_code_points(raw, what, spaces=False)
    normal = unicodedata.normalize("NFKC", raw)
    if normal != raw:
        raise InvalidName(f"{what} {raw!r} is not in Unicode normal form NFKC (fullwidth or compatibility "
                          f"characters); write it {normal!r}")


def check_code_points(raw: str, what: str, *, spaces: bool) -> None:
    """No control, format, private-use, unassigned or surrogate code point (nor white space unless ``spaces``)."""
    for char in raw:
        category = unicodedata.category(char)
        if category in _FORBIDDEN_CATEGORIES or (char.isspace() and not (spaces and category == "Zs")):
            raise InvalidName(f"{what} {raw!r} contains the forbidden character U+{ord(char):04X}")


def domain(raw: str) -> Domain:
    """The normalised domain; raises InvalidName."""
    check_text(raw, "domain")
    if len(raw) > MAX_DOMAIN:
        raise InvalidName(f"domain is longer than {MAX_DOMAIN} characters")
    if not (raw.startswith("[") and raw.endswith("]")):   # address literals: Domain.of checks them
        for label in raw.split("."):
            _check_label(raw, label)
    try:
        return Domain.of(raw)
    except InvalidAddress as exc:
        raise InvalidName(str(exc)) from None


def _check_label(raw: str, label: str) -> None:
    if not label:
        raise InvalidName(f"domain {raw!r} has an empty label (leading, trailing or doubled dot)")
    if len(label) > MAX_LABEL:
        raise InvalidName(f"domain {raw!r} has a label longer than {MAX_LABEL} characters")
    bad = next((c for c in label if not (c.isalnum() or c in _LABEL_EDGES)), None)
    if bad is not None:
        raise InvalidName(f"domain {raw!r}: {bad!r} is not allowed (letters, digits, '-' and '_' only)")
    if label[0] in _LABEL_EDGES or label[-1] in _LABEL_EDGES:
        raise InvalidName(f"domain {raw!r}: a label must not start or end with '-' or '_'")
    if not label.isascii():
        _check_idna_label(raw, label)


def _check_idna_label(raw: str, label: str) -> None:
    """A Unicode label must come back from its stored (IDNA 2003) form unchanged: ``straße`` would be
    stored as ``strasse`` and a final sigma as a sigma, other domains under IDNA 2008."""
    lowered = label.lower()
    try:
        back = lowered.encode("idna").decode("idna")
    except UnicodeError as exc:
        raise InvalidName(f"domain {raw!r}: the label {label!r} is not a valid IDN label: {exc}") from None
    if back != lowered:
        raise InvalidName(f"domain {raw!r}: the label {label!r} would be stored as {back!r} (IDNA 2003 "
                          f"mapping); give the domain in its ASCII form (xn--...)")


def _check_local_part(raw: str, local: str, what: str) -> None:
    if not local:
        raise InvalidName(f"{what} {raw!r} has an empty local part")
    if len(local) > MAX_LOCAL_PART:
        raise InvalidName(f"{what} {raw!r} has a local part longer than {MAX_LOCAL_PART} characters")
    bad = next((c for c in local if c in ILLEGAL_LOCAL_PART), None)
    if bad is not None:
        raise InvalidName(f"{what} {raw!r} must not contain any of {''.join(sorted(ILLEGAL_LOCAL_PART))!r} "
                          f"(found {bad!r})")


def username(raw: str) -> Username:
    """The normalised user name; raises InvalidName."""
    check_text(raw, "username")
    if len(raw) > MAX_USERNAME:
        raise InvalidName(f"username is longer than {MAX_USERNAME} characters")
    local, at, domain_part = raw.partition("@")
    _check_local_part(raw, local, "username")
    # The domain part spelled as the domain is stored (IDNA), or mail to the user never finds it.
    name = f"{local}@{domain(domain_part).name}" if at else raw
    try:
        return Username.of(name)
    except InvalidAddress as exc:
        raise InvalidName(str(exc)) from None


def address(raw: str, what: str = "address") -> MailAddress:
    """A mail address about to be stored (a user name's rules, the domain part required); raises InvalidName."""
    check_text(raw, what)
    if "@" not in raw:
        raise InvalidName(f"{what} {raw!r} has no domain part")
    local, _, domain_part = raw.rpartition("@")
    _check_local_part(raw, local, what)
    domain(domain_part)
    try:
        return MailAddress.of(raw)
    except InvalidAddress as exc:
        raise InvalidName(str(exc)) from None


def mapping_source(raw: str) -> MappingSource:
    """A rewrite-table source about to be stored: ``user@domain``, ``*@domain`` or a bare domain."""
    check_text(raw, "mapping source")
    local, at, domain_part = raw.rpartition("@")
    if at and local != WILDCARD:
        _check_local_part(raw, local, "mapping source")
    if domain_part != WILDCARD:
        domain(domain_part)
    try:
        return MappingSource.parse(raw)
    except (InvalidAddress, InvalidMapping) as exc:
        raise InvalidName(str(exc)) from None


def mapping(kind: MappingType, value: str) -> Mapping:
    """A mapping about to be stored: its address or domain checked as above, any other value for code points."""
    if not isinstance(value, str):
        raise InvalidName(f"{kind.james_name} mapping value must be a string, got {value!r}")
    if kind in ADDRESS_TYPES:
        address(value, f"{kind.james_name} mapping")
    elif kind in DOMAIN_TYPES:
        domain(value)
    else:
        check_code_points(value, f"{kind.james_name} mapping", spaces=True)
    try:
        return Mapping.of(kind, value)
    except InvalidMapping as exc:
        raise InvalidName(str(exc)) from None
