"""``/domains`` (webadmin reference §4): list, check, add, remove; domain aliases on the RRT; its users."""

from __future__ import annotations

from fastapi import APIRouter, Response

from mailserver.domains.api import DomainAlreadyExists, DomainList, DomainNotFound
from mailserver.model.address import Domain, InvalidAddress
from mailserver.rrt.api import RecipientRewriteTable
from mailserver.rrt.mapping import Mapping, MappingType
from mailserver.users.api import UsersRepository
from mailserver.webadmin import validation
from mailserver.webadmin.errors import bad_request, not_found

NO_CONTENT = 204


def parse_domain(raw: str) -> Domain:
    """Lenient: finds (and removes) domains whatever their spelling (``Example.COM.``)."""
    # James's rules first (its messages), then ours (labels, IDNA).
    if not raw or len(raw) > 255 or "@" in raw or "/" in raw:
        raise bad_request(f"Invalid domain name: {raw!r} (non-empty, at most 255 characters, no '@' nor '/')")
    try:
        return Domain.of(raw)
    except InvalidAddress as exc:
        raise bad_request(str(exc)) from exc


def new_domain(raw: str) -> Domain:
    """Strict: a domain about to be stored (``validation.domain``)."""
    try:
        return validation.domain(raw)
    except InvalidAddress as exc:
        raise bad_request(str(exc)) from exc


def router(domains: DomainList, rrt: RecipientRewriteTable, users: UsersRepository) -> APIRouter:
    api = APIRouter(tags=["domains"])

    @api.get("/domains", summary="List local domains")
    def list_domains() -> list[str]:
        return [d.name for d in domains.list()]

    @api.get("/domains/{domain}", status_code=NO_CONTENT, summary="204 if the domain is local, 404 otherwise")
    def exists(domain: str) -> Response:
        d = parse_domain(domain)
        if not domains.contains(d):
            raise not_found(f"The domain list does not contain: {d.name}")
        return Response(status_code=NO_CONTENT)

    @api.put("/domains/{domain}", status_code=NO_CONTENT, summary="Add a domain (idempotent)")
    def add(domain: str) -> Response:
        try:
            domains.add(new_domain(domain))
        except DomainAlreadyExists:
            pass   # James answers 204 for an existing domain too
        return Response(status_code=NO_CONTENT)

    @api.delete("/domains/{domain}", status_code=NO_CONTENT, summary="Remove a domain (users and mappings stay)")
    def remove(domain: str) -> Response:
        try:
            domains.remove(parse_domain(domain))
        except DomainNotFound:
            pass   # absent: nothing to do, as James
        return Response(status_code=NO_CONTENT)

    @api.get("/domains/{destination}/aliases", summary="Domains aliased to this one")
    def aliases(destination: str) -> list[dict[str, str]]:
        d = _managed(domains, destination)
        return [{"source": s.domain} for s in rrt.list_sources(Mapping.domain_alias(d)) if s.is_domain]

    @api.get("/domains/{domain}/users", summary="Users of a local domain (James's listUsersOfADomain)")
    def users_of(domain: str) -> list[str]:
        return [u.value for u in users.list_users_of_domain(_managed(domains, domain))]

    @api.put("/domains/{destination}/aliases/{source}", status_code=NO_CONTENT, summary="Add a domain alias")
    def add_alias(destination: str, source: str) -> Response:
        d, s = _managed(domains, destination), new_domain(source)
        if d == s:
            raise bad_request("Source domain and destination domain can not have same value")
        if Mapping(MappingType.DOMAIN_ALIAS, d.name) not in rrt.get_stored_mappings(f"*@{s.name}"):
            # The raw write: James does not require the alias domain itself to be local.
            rrt.add_mapping(f"*@{s.name}", Mapping.domain_alias(d))
        return Response(status_code=NO_CONTENT)

    @api.delete("/domains/{destination}/aliases/{source}", status_code=NO_CONTENT, summary="Remove a domain alias")
    def remove_alias(destination: str, source: str) -> Response:
        d, s = _managed(domains, destination), parse_domain(source)
        if d == s:
            raise bad_request("Source domain and destination domain can not have same value")
        rrt.remove_mapping(f"*@{s.name}", Mapping.domain_alias(d))
        return Response(status_code=NO_CONTENT)

    return api


def _managed(domains: DomainList, raw: str) -> Domain:
    d = parse_domain(raw)
    if not domains.contains(d):
        raise not_found(f"The domain list does not contain: {d.name}")
    return d
