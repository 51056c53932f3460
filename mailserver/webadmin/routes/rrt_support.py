"""Parsing and checks shared by the recipient-rewriting routes (groups, forwards, aliases, mappings)."""

from __future__ import annotations

from collections.abc import Callable

from mailserver.model.address import InvalidAddress, MailAddress, Username
from mailserver.rrt.api import (
    MappingAlreadyExists,
    RecipientRewriteTable,
    SameSourceAndDestination,
    SourceDomainNotManaged,
)
from mailserver.rrt.mapping import InvalidMapping, Mapping, MappingSource, MappingType
from mailserver.rrt.resolver import MappingErrorException, RecipientRewriter, RecursionLoopError
from mailserver.users.api import UsersRepository
from mailserver.webadmin import validation
from mailserver.webadmin.errors import bad_request, conflict


def parse_address(raw: str, what: str = "address") -> MailAddress:
    """Lenient: finds (and removes) mappings whatever their spelling, older rows included."""
    try:
        return MailAddress.of(raw)
    except InvalidAddress as exc:
        raise bad_request(f"The {what} is not an email address: {exc}") from exc


def new_address(raw: str, what: str = "address") -> MailAddress:
    """Strict: an address about to be stored in the table (``validation.address``)."""
    try:
        return validation.address(raw, what)
    except InvalidAddress as exc:
        raise bad_request(f"The {what} is not an email address: {exc}") from exc


def new_source(raw: str) -> MappingSource:
    """Strict: a mapping source about to be stored (``validation.mapping_source``)."""
    try:
        return validation.mapping_source(raw)
    except InvalidAddress as exc:
        raise bad_request(f"Invalid mapping source {raw!r}: {exc}") from exc


def new_mapping(kind: MappingType, value: str) -> Mapping:
    """Strict: a mapping about to be stored (``validation.mapping``)."""
    try:
        return validation.mapping(kind, value)
    except InvalidAddress as exc:
        raise bad_request(f"Invalid {kind.james_name} mapping {value!r}: {exc}") from exc


def source_json(source: MappingSource) -> str:
    """James's ``MappingSource.asString``: a whole-domain source is written as the bare domain."""
    return source.domain if source.is_domain else source.as_string()


def is_user(users: UsersRepository, address: MailAddress) -> bool:
    try:
        return users.contains(Username.of(str(address)))
    except InvalidAddress:
        return False


def check_no_loop(rewriter: RecipientRewriter, source: MailAddress, target: MailAddress) -> None:
    """409 when ``source -> target`` would close a cycle (James refuses loops at write time).

    The port leaves loops to the resolver's depth limit at delivery; here we look ahead: if
    ``target`` already resolves back to ``source``, the new mapping would make a loop.
    """
    try:
        resolved = rewriter.rewrite(target)
    except RecursionLoopError:
        raise conflict("Creation of redirection would lead to a loop, operation not performed",
                       f"{target} already loops") from None
    except MappingErrorException:
        return
    if any(str(a).lower() == str(source).lower() for a in resolved):
        raise conflict("Creation of redirection would lead to a loop, operation not performed",
                       f"{source} -> {target} -> {source}")


def write(action: Callable[[], None]) -> None:
    """Run an RRT write with James's error mapping; a duplicate is a success (idempotent PUT)."""
    try:
        action()
    except MappingAlreadyExists:
        pass
    except (SourceDomainNotManaged, SameSourceAndDestination, InvalidMapping, InvalidAddress) as exc:
        raise bad_request(str(exc)) from exc


def make_rewriter(rrt: RecipientRewriteTable, domains: object) -> RecipientRewriter:
    return RecipientRewriter(rrt, domains)  # type: ignore[arg-type]
