"""Resolve a recipient through the recipient rewrite table, with James's semantics.

``RecipientRewriter.resolve(address)`` is James's ``getResolvedMappings`` and
``rewrite(address)`` what the RecipientRewriteTable mailet does with it. Exactly:

1. **Lookup.** The mappings of ``local@domain`` (local part lower-cased, see ``mapping.py``); if
   there are none, those of ``*@domain``. The global wildcard ``*@*`` is not consulted (James's
   ``mapAddress`` does not either). Mappings of types outside ``types`` are ignored.
2. **Each mapping rewrites the address being resolved**, in stored order:

   * Address, Alias, Forward, Group: the target address. A target without ``@domain`` (legacy
     row) takes the domain of the address being resolved (James: ``withDefaultDomainFromUser``).
   * Domain and DomainAlias: same local part, the mapping's domain.
   * Regex ``<pattern>:<replacement>``: the pattern must match the *whole* address
     (``local@domain``); ``${n}`` and ``$n`` in the replacement are replaced by group ``n``. No
     match: the mapping yields nothing. A result without ``@`` takes the current domain.
   * Error ``error:<message>``: resolution stops with ``MappingErrorException(message)``.

3. **Recursion.** Each rewritten address is resolved again; if it has no mapping (or all its
   mappings yield nothing), it is the result, otherwise its own results replace it. Group
   members fan out this way, each resolved on its own.
4. **Identity.** A mapping that rewrites an address to itself (compared case-insensitively):

   * Forward: the address is kept and not resolved again. This is how a user forwarding to
     others keeps a local copy: list yourself among the forward targets.
   * any other type: that whole level of resolution yields nothing (James's
     ``SkipMappingProcessingException``), so the caller keeps the address it was resolving.

5. **Depth limit.** At most ``max_loops`` lookups along one chain (10, James's
   ``mappingLimit``); the next one raises ``RecursionLoopError`` (a subclass of
   ``MappingErrorException``, as James's TooManyMappingException). A loop ``a -> b -> a`` always
   ends here. The mail flow sends such recipients to the ``rrt-error`` processor.
6. **Result.** ``resolve`` returns the final mappings (type Forward/Group/Alias kept, every
   other type becomes Address, as James's ``toMapping``), duplicates removed in first-seen
   order; an empty list means "no rewriting". ``rewrite`` returns the addresses, and the
   original address alone when nothing applies.

Regexes are Python ``re`` patterns: the usual Java patterns of James configurations read the
same, but Java-only syntax (``\\p{Alpha}``, ``\\p{javaLowerCase}`` ...) does not.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import TypeVar

import regex

from mailserver.domains.api import DomainList
from mailserver.model.address import Domain, InvalidAddress, MailAddress
from mailserver.rrt.api import RecipientRewriteTable
from mailserver.rrt.mapping import (
    ADDRESS_TYPES,
    DOMAIN_TYPES,
    InvalidMapping,
    Mapping,
    MappingSource,
    MappingType,
    split_regex,
)

ALL_TYPES: frozenset[MappingType] = frozenset(MappingType)
_KEEP_TYPE = frozenset({MappingType.FORWARD, MappingType.GROUP, MappingType.ALIAS})
_GROUP_REF = re.compile(r"\$\{(\d+)\}|\$(\d+)")
T = TypeVar("T")


class MappingErrorException(Exception):
    """An ``error:`` mapping was reached (or a mapping could not be applied)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RecursionLoopError(MappingErrorException):
    def __init__(self, address: MailAddress, max_loops: int) -> None:
        super().__init__(f"554 Too many mappings to process: resolving {address} took more than "
                         f"{max_loops} rewrites (a mapping loop?)")
        self.address = address
        self.max_loops = max_loops


class _SkipLevel(Exception):
    """A non-forward mapping rewrote an address to itself: this level yields nothing."""


class RecipientRewriter:
    def __init__(self, rrt: RecipientRewriteTable, domains: DomainList, max_loops: int = 10) -> None:
        if max_loops < 1:
            raise ValueError("max_loops must be at least 1")
        self.rrt = rrt
        self.domains = domains
        self.max_loops = max_loops

    def rewrite(self, address: MailAddress, types: Collection[MappingType] = ALL_TYPES) -> list[MailAddress]:
        """Final recipients for ``address``; ``[address]`` when no mapping applies."""
        mappings = self.resolve(address, types)
        if not mappings:
            return [address]
        return _unique(MailAddress.of(m.value) for m in mappings)

    def resolve(self, address: MailAddress, types: Collection[MappingType] = ALL_TYPES) -> list[Mapping]:
        """James's resolved mappings; empty when nothing applies. Raises MappingErrorException."""
        return self._resolve(address, self.max_loops, frozenset(types))

    def split_local(self, addresses: Iterable[MailAddress]) -> tuple[list[MailAddress], list[MailAddress]]:
        """(local, remote) by the domain list: local ones are delivered, remote ones relayed."""
        local: list[MailAddress] = []
        remote: list[MailAddress] = []
        for address in addresses:
            (local if self.domains.contains(address.domain) else remote).append(address)
        return local, remote

    # -- James's algorithm ------------------------------------------------------------------------
    def _resolve(self, address: MailAddress, remaining: int, types: frozenset[MappingType]) -> list[Mapping]:
        if remaining == 0:
            raise RecursionLoopError(address, self.max_loops)
        results: list[Mapping] = []
        try:
            for mapping in self._lookup(address):
                if mapping.type in types:
                    results.extend(self._apply(address, mapping, remaining, types))
        except _SkipLevel:
            return []
        return _unique(results)

    def _lookup(self, address: MailAddress) -> list[Mapping]:
        mappings = self.rrt.get_stored_mappings(MappingSource.from_address(address))
        return mappings or self.rrt.get_stored_mappings(MappingSource.from_domain(address.domain))

    def _apply(self, address: MailAddress, mapping: Mapping, remaining: int,
               types: frozenset[MappingType]) -> list[Mapping]:
        rewritten = _rewrite_one(address, mapping)
        if rewritten is None:
            return []
        result = Mapping(mapping.type if mapping.type in _KEEP_TYPE else MappingType.ADDRESS, str(rewritten))
        if _same(rewritten, address):
            if mapping.type is MappingType.FORWARD:
                return [result]
            raise _SkipLevel
        return self._resolve(rewritten, remaining - 1, types) or [result]


# An address is at most 320 characters: any sane pattern answers in microseconds.
REGEX_MATCH_SECONDS = 0.05

def _rewrite_one(address: MailAddress, mapping: Mapping) -> MailAddress | None:
    """The address ``mapping`` turns ``address`` into; None when it does not apply."""
    if mapping.type is MappingType.ERROR:
        raise MappingErrorException(mapping.value)
    try:
        if mapping.type in ADDRESS_TYPES:
            return _with_domain(mapping.value, address.domain)
        if mapping.type in DOMAIN_TYPES:
            return MailAddress(address.local_part, Domain.of(mapping.value))
        if mapping.type is MappingType.REGEX:
            pattern, replacement = split_regex(mapping.value)
            try:
                match = pattern.fullmatch(str(address), timeout=REGEX_MATCH_SECONDS)
            except TimeoutError:
                raise MappingErrorException(f"regex mapping {mapping.value!r} took longer than "
                                            f"{REGEX_MATCH_SECONDS * 1000:.0f} ms on {address}") from None
            if match is None:
                return None
            return _with_domain(_substitute(replacement, match), address.domain)
    except (InvalidAddress, InvalidMapping) as exc:
        # A stored value we cannot apply (legacy row, bad regex result): the recipient goes to
        # the error processor instead of being silently dropped.
        raise MappingErrorException(f"cannot apply mapping {mapping.as_string()} to {address}: {exc}") from exc
    raise MappingErrorException(f"unsupported mapping type {mapping.type}")


def _with_domain(target: str, domain: Domain) -> MailAddress:
    return MailAddress.of(target if "@" in target else f"{target}@{domain}")


def _substitute(replacement: str, match: regex.Match[str]) -> str:
    def group(ref: re.Match[str]) -> str:
        index = int(ref.group(1) or ref.group(2))
        if index > (match.re.groups or 0):
            return ref.group(0)   # James leaves unknown ${n} as written
        return match.group(index) or ""

    return _GROUP_REF.sub(group, replacement)


def _same(a: MailAddress, b: MailAddress) -> bool:
    return str(a).lower() == str(b).lower()


def _unique(items: Iterable[T]) -> list[T]:
    return list(dict.fromkeys(items))
