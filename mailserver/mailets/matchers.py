"""Standard matchers (James's ``org.apache.james.transport.matchers``), one small class each.

A matcher answers "which recipients?": all of them for mail-level conditions (sender,
attributes, headers, size), a subset for recipient-level ones. The container splits the mail
when the answer is a strict subset.
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING

from mailserver.mailets.api import ConfigError, Matcher
from mailserver.mailets.mime import header_values, split_fields
from mailserver.model.address import Domain, InvalidAddress, MailAddress
from mailserver.model.mail import (
    IS_DELIVERY_PERMANENT_ERROR,
    JMAP_AUTH_USER,
    SENT_BY_MAILET,
    SMTP_AUTH_USER,
    SMTP_IS_AUTH_NETWORK,
    Mail,
)
from mailserver.model.quota import QuotaRoot, QuotaUsage
from mailserver.rrt.resolver import MappingErrorException, RecursionLoopError

if TYPE_CHECKING:
    from mailserver.mailets.context import MailetContext

def _all_if(mail: Mail, condition: bool) -> list[MailAddress]:
    return list(mail.recipients) if condition else []


def _addresses(matcher: str, condition: str | None) -> set[str]:
    """A comma (or space) separated address list, compared lower-cased."""
    out: set[str] = set()
    for token in re.split(r"[,\s]+", condition or ""):
        if token:
            try:
                out.add(str(MailAddress.of(token)).lower())
            except InvalidAddress as exc:
                raise ConfigError(f"matcher {matcher}: {exc}") from None
    if not out:
        raise ConfigError(f"matcher {matcher} needs at least one address")
    return out


class All(Matcher):
    name = "All"

    def match(self, mail: Mail) -> list[MailAddress]:
        return list(mail.recipients)


class RecipientIsLocal(Matcher):
    """Recipients that are existing users of a local domain."""

    name = "RecipientIsLocal"

    def match(self, mail: Mail) -> list[MailAddress]:
        return [r for r in mail.recipients if self.context.is_local_user(r)]


class HostIsLocal(Matcher):
    """Recipients in a local domain, whether or not the user exists."""

    name = "HostIsLocal"

    def match(self, mail: Mail) -> list[MailAddress]:
        return [r for r in mail.recipients if self.context.is_local_server(r.domain)]


class SenderIsLocal(Matcher):
    name = "SenderIsLocal"

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, mail.sender is not None and self.context.is_local_user(mail.sender))


class SenderIsNull(Matcher):
    name = "SenderIsNull"

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, mail.sender is None)


class RecipientIs(Matcher):
    name = "RecipientIs"
    condition_required = True

    def __init__(self, condition: str | None, context: MailetContext) -> None:
        super().__init__(condition, context)
        self.addresses = _addresses(self.name, self.condition)

    def match(self, mail: Mail) -> list[MailAddress]:
        return [r for r in mail.recipients if str(r).lower() in self.addresses]


class SenderIs(Matcher):
    name = "SenderIs"
    condition_required = True

    def __init__(self, condition: str | None, context: MailetContext) -> None:
        super().__init__(condition, context)
        self.addresses = _addresses(self.name, self.condition)

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, mail.sender is not None and str(mail.sender).lower() in self.addresses)


class SMTPAuthSuccessful(Matcher):
    name = "SMTPAuthSuccessful"

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, bool(mail.attributes.get(SMTP_AUTH_USER)))


class SMTPIsAuthNetwork(Matcher):
    name = "SMTPIsAuthNetwork"

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, mail.attributes.get(SMTP_IS_AUTH_NETWORK) in (True, "true"))


class SentByMailet(Matcher):
    name = "SentByMailet"

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, SENT_BY_MAILET in mail.attributes)


class SentByJmap(Matcher):
    name = "SentByJmap"

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, bool(mail.attributes.get(JMAP_AUTH_USER)))


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(matcher: str, condition: str | None) -> list[Network]:
    """James's NetMatcher syntax: ``127.0.0.1``, ``192.168.0.0/16``, ``10.0.0.0/255.0.0.0``,
    ``192.168.*`` (wildcard octets), IPv6 with ``/prefix``; comma or space separated."""
    networks: list[Network] = []
    for token in re.split(r"[,\s]+", condition or ""):
        if not token:
            continue
        spec = token
        if "*" in spec and ":" not in spec:
            octets = [o for o in spec.split(".") if o]
            if "*" not in octets:
                raise ConfigError(f"matcher {matcher}: bad wildcard network {token!r}")
            first = octets.index("*")
            fixed = octets[:first]
            if any(o != "*" for o in octets[first:]) or len(octets) > 4:
                raise ConfigError(f"matcher {matcher}: bad wildcard network {token!r}")
            spec = ".".join(fixed + ["0"] * (4 - len(fixed))) + f"/{8 * len(fixed)}"
        try:
            networks.append(ipaddress.ip_network(spec, strict=False))
        except ValueError as exc:
            raise ConfigError(f"matcher {matcher}: bad network {token!r}: {exc}") from None
    if not networks:
        raise ConfigError(f"matcher {matcher} needs at least one network")
    return networks


class RemoteAddrInNetwork(Matcher):
    name = "RemoteAddrInNetwork"
    condition_required = True

    def __init__(self, condition: str | None, context: MailetContext) -> None:
        super().__init__(condition, context)
        self.networks = parse_networks(self.name, self.condition)

    def _inside(self, mail: Mail) -> bool:
        try:
            address = ipaddress.ip_address(mail.remote_addr)
        except ValueError:
            return False
        return any(address.version == n.version and address in n for n in self.networks)

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, self._inside(mail))


class RemoteAddrNotInNetwork(RemoteAddrInNetwork):
    name = "RemoteAddrNotInNetwork"

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, not self._inside(mail))


class RelayLimit(Matcher):
    """All recipients once the message carries ``limit`` or more ``Received`` headers (loop guard)."""

    name = "RelayLimit"
    condition_required = True

    def __init__(self, condition: str | None, context: MailetContext) -> None:
        super().__init__(condition, context)
        try:
            self.limit = int(self.condition or "")
        except ValueError:
            raise ConfigError(f"matcher RelayLimit: the limit must be an integer, not {condition!r}") from None
        if self.limit <= 0:
            raise ConfigError(f"matcher RelayLimit: the limit must be strictly positive, not {self.limit}")

    def match(self, mail: Mail) -> list[MailAddress]:
        header = self.context.contents.read_header(mail.content)
        count = sum(1 for f in split_fields(header)[0] if f.split(b":", 1)[0].strip().lower() == b"received")
        return _all_if(mail, count >= self.limit)


class HasMailAttribute(Matcher):
    name = "HasMailAttribute"
    condition_required = True

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, self.condition in mail.attributes)


class HasMailAttributeWithValue(Matcher):
    """``name, value``: the attribute's value (as text) equals ``value``."""

    name = "HasMailAttributeWithValue"
    condition_required = True

    def __init__(self, condition: str | None, context: MailetContext) -> None:
        super().__init__(condition, context)
        attribute, sep, value = (self.condition or "").partition(",")
        if not sep or not attribute.strip():
            raise ConfigError(f"matcher {self.name}: expected 'name, value', got {condition!r}")
        self.attribute, self.value = attribute.strip(), value.strip()

    def match(self, mail: Mail) -> list[MailAddress]:
        if self.attribute not in mail.attributes:
            return []
        actual = mail.attributes[self.attribute]
        text = ("true" if actual else "false") if isinstance(actual, bool) else str(actual)
        return _all_if(mail, text == self.value)


class HasHeader(Matcher):
    """``name`` or ``name=value``; several specs joined by ``+`` must all hold (James)."""

    name = "HasHeader"
    condition_required = True

    def __init__(self, condition: str | None, context: MailetContext) -> None:
        super().__init__(condition, context)
        self.specs: list[tuple[str, str | None]] = []
        for spec in (self.condition or "").split("+"):
            name, sep, value = spec.partition("=")
            if not name.strip():
                raise ConfigError(f"matcher HasHeader: empty header name in {condition!r}")
            self.specs.append((name.strip(), value.strip() if sep else None))

    def match(self, mail: Mail) -> list[MailAddress]:
        header = self.context.contents.read_header(mail.content)
        for name, value in self.specs:
            values = header_values(header, name)
            if not values or (value is not None and value not in values):
                return []
        return list(mail.recipients)


_SIZE = re.compile(r"^\s*(\d+)\s*([kKmM]?)\s*$")


def parse_size(matcher: str, condition: str | None) -> int:
    """James's size syntax: bytes, ``k`` (x1024) or ``m`` (x1024x1024)."""
    match = _SIZE.match(condition or "")
    if not match:
        raise ConfigError(f"matcher {matcher}: bad size {condition!r} (e.g. 100, 100k, 1m)")
    number, unit = int(match.group(1)), match.group(2).lower()
    return number * {"": 1, "k": 1024, "m": 1024 * 1024}[unit]


class SizeGreaterThan(Matcher):
    name = "SizeGreaterThan"
    condition_required = True

    def __init__(self, condition: str | None, context: MailetContext) -> None:
        super().__init__(condition, context)
        self.limit = parse_size(self.name, self.condition)

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, mail.content.size > self.limit)


class IsRemoteDeliveryPermanentError(Matcher):
    name = "IsRemoteDeliveryPermanentError"

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, mail.attributes.get(IS_DELIVERY_PERMANENT_ERROR) is True)


class IsRemoteDeliveryTemporaryError(Matcher):
    name = "IsRemoteDeliveryTemporaryError"

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, mail.attributes.get(IS_DELIVERY_PERMANENT_ERROR) is False)


class IsSenderInRRTLoop(Matcher):
    """All recipients when resolving the sender through the rewrite table loops.

    The rrt-error processor uses it to avoid bouncing to an address whose own mappings loop
    (the bounce would come straight back to rrt-error).
    """

    name = "IsSenderInRRTLoop"

    def match(self, mail: Mail) -> list[MailAddress]:
        if mail.sender is None:
            return []
        try:
            self.context.rewriter.rewrite(mail.sender)
        except RecursionLoopError:
            return list(mail.recipients)
        except MappingErrorException:
            return []
        return []


def _domains(matcher: str, condition: str | None) -> set[str]:
    out = set()
    for token in re.split(r"[,\s]+", condition or ""):
        if token:
            try:
                out.add(Domain.of(token).name)
            except InvalidAddress as exc:
                raise ConfigError(f"matcher {matcher}: {exc}") from None
    if not out:
        raise ConfigError(f"matcher {matcher} needs at least one domain")
    return out


class HostIs(Matcher):
    """Recipients whose domain is in the list."""

    name = "HostIs"
    condition_required = True

    def __init__(self, condition: str | None, context: MailetContext) -> None:
        super().__init__(condition, context)
        self.domains = _domains(self.name, self.condition)

    def match(self, mail: Mail) -> list[MailAddress]:
        return [r for r in mail.recipients if r.domain.name in self.domains]


class RecipientDomainIs(HostIs):
    name = "RecipientDomainIs"


class SenderHostIs(HostIs):
    """All recipients when the sender's domain is in the list."""

    name = "SenderHostIs"

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, mail.sender is not None and mail.sender.domain.name in self.domains)


class SenderDomainIs(SenderHostIs):
    name = "SenderDomainIs"


def _regex(matcher: str, condition: str | None) -> re.Pattern[str]:
    try:
        return re.compile(condition or "")
    except re.error as exc:
        raise ConfigError(f"matcher {matcher}: bad regular expression {condition!r}: {exc}") from None


class RecipientIsRegex(Matcher):
    """Recipients whose address matches the (Python ``re``) pattern, searched anywhere."""

    name = "RecipientIsRegex"
    condition_required = True

    def __init__(self, condition: str | None, context: MailetContext) -> None:
        super().__init__(condition, context)
        self.pattern = _regex(self.name, self.condition)

    def match(self, mail: Mail) -> list[MailAddress]:
        return [r for r in mail.recipients if self.pattern.search(str(r))]


class SenderIsRegex(RecipientIsRegex):
    name = "SenderIsRegex"

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, mail.sender is not None and bool(self.pattern.search(str(mail.sender))))


class SubjectIs(Matcher):
    name = "SubjectIs"
    condition_required = True

    def _subject(self, mail: Mail) -> str | None:
        subjects = header_values(self.context.contents.read_header(mail.content), "Subject")
        return subjects[0] if subjects else None

    def match(self, mail: Mail) -> list[MailAddress]:
        return _all_if(mail, self._subject(mail) == self.condition)


class SubjectStartsWith(SubjectIs):
    name = "SubjectStartsWith"

    def match(self, mail: Mail) -> list[MailAddress]:
        subject = self._subject(mail)
        return _all_if(mail, subject is not None and subject.startswith(self.condition or ""))


class SMTPAuthUserIs(Matcher):
    name = "SMTPAuthUserIs"
    condition_required = True

    def __init__(self, condition: str | None, context: MailetContext) -> None:
        super().__init__(condition, context)
        self.users = {u.lower() for u in re.split(r"[,\s]+", self.condition or "") if u}

    def match(self, mail: Mail) -> list[MailAddress]:
        user = mail.attributes.get(SMTP_AUTH_USER)
        return _all_if(mail, isinstance(user, str) and user.lower() in self.users)


class IsOverQuota(Matcher):
    """Local recipients whose quota this mail would exceed (one more message of its size)."""

    name = "IsOverQuota"

    def match(self, mail: Mail) -> list[MailAddress]:
        quota = self.context.mailboxes.quota
        delta = QuotaUsage(1, mail.content.size)
        over = []
        for recipient in mail.recipients:
            if not self.context.is_local_user(recipient):
                continue
            root = QuotaRoot.for_user(self.context.username_of(recipient))
            limits = quota.limits(root)
            if not limits.unlimited and limits.exceeded_by(quota.current(root) + delta):
                over.append(recipient)
        return over


BUILTIN_MATCHERS: dict[str, type[Matcher]] = {cls.name: cls for cls in (
    All, RecipientIsLocal, HostIsLocal, SenderIsLocal, SenderIsNull, RecipientIs, SenderIs, SMTPAuthSuccessful,
    SMTPIsAuthNetwork, SentByMailet, SentByJmap, RemoteAddrInNetwork, RemoteAddrNotInNetwork, RelayLimit,
    HasMailAttribute, HasMailAttributeWithValue, HasHeader, SizeGreaterThan, IsRemoteDeliveryPermanentError,
    IsRemoteDeliveryTemporaryError, IsSenderInRRTLoop, HostIs, RecipientDomainIs, SenderHostIs, SenderDomainIs,
    RecipientIsRegex, SenderIsRegex, SubjectIs, SubjectStartsWith, SMTPAuthUserIs, IsOverQuota)}


class Composite(Matcher):
    """James's composite matchers (``Or``, ``And``, ``Not``, ``Xor``) over child matchers."""

    def __init__(self, children: list[Matcher], context: MailetContext) -> None:
        super().__init__(None, context)
        if not children:
            raise ConfigError(f"composite matcher {self.name} needs at least one child matcher")
        self.children = children

    def _matched(self, mail: Mail) -> list[set[MailAddress]]:
        return [set(child.match(mail)) for child in self.children]

    def __str__(self) -> str:
        return f"{self.name}({', '.join(str(c) for c in self.children)})"


class Or(Composite):
    name = "Or"

    def match(self, mail: Mail) -> list[MailAddress]:
        union = set().union(*self._matched(mail))
        return [r for r in mail.recipients if r in union]


class And(Composite):
    name = "And"

    def match(self, mail: Mail) -> list[MailAddress]:
        common = set.intersection(*self._matched(mail))
        return [r for r in mail.recipients if r in common]


class Not(Composite):
    """Recipients matched by none of the children (a single child: its complement)."""

    name = "Not"

    def match(self, mail: Mail) -> list[MailAddress]:
        union = set().union(*self._matched(mail))
        return [r for r in mail.recipients if r not in union]


class Xor(Composite):
    name = "Xor"

    def match(self, mail: Mail) -> list[MailAddress]:
        sets = self._matched(mail)
        return [r for r in mail.recipients if sum(r in s for s in sets) % 2 == 1]


COMPOSITES: dict[str, type[Composite]] = {cls.name.lower(): cls for cls in (Or, And, Not, Xor)}
