"""``/droplist`` (James's ``DropListRoutes``): denied senders at the global, domain and user scopes.

Paths as James's: ``/droplist/{scope}[/{owner}]`` lists (``?deniedEntityType=domain|address``),
``/droplist/{scope}[/{owner}]/{entity}`` checks (HEAD), adds (PUT) and removes (DELETE); without
an owner segment the owner is empty (the global scope). An entity with an ``@`` is an address,
otherwise a domain. Owners and entities are stored in their canonical form (lower-case domain,
IDNA); lookups accept the spelling given too.
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Response

from mailserver.droplist.api import DeniedEntityType, DropList, DropListEntry, OwnerScope
from mailserver.model.address import Domain, InvalidAddress, MailAddress
from mailserver.webadmin import validation
from mailserver.webadmin.errors import bad_request

NO_CONTENT, NOT_FOUND = 204, 404


def router(droplist: DropList) -> APIRouter:
    api = APIRouter(tags=["droplist"])

    def listed(scope: str, owner: str, kind: str | None) -> list[str]:
        wanted = _entity_type(kind)
        entries = droplist.list(_scope(scope), _lookup_owner(_scope(scope), owner))
        return list(dict.fromkeys(e.denied_entity for e in entries
                                  if wanted is None or e.denied_entity_type == wanted))

    @api.get("/droplist/{scope}", summary="Denied senders of the global scope")
    def list_scope(scope: str, deniedEntityType: str | None = Query(None)) -> list[str]:
        return listed(scope, "", deniedEntityType)

    @api.get("/droplist/{scope}/{owner}", summary="Denied senders of a domain or a user")
    def list_owner(scope: str, owner: str, deniedEntityType: str | None = Query(None)) -> list[str]:
        return listed(scope, owner, deniedEntityType)

    def add(scope: str, owner: str, entity: str) -> Response:
        droplist.add(_new_entry(_scope(scope), owner, entity))
        return Response(status_code=NO_CONTENT)

    def exists(scope: str, owner: str, entity: str) -> Response:
        found = _matching(droplist, _scope(scope), owner, entity)
        return Response(status_code=NO_CONTENT if found else NOT_FOUND)

    def remove(scope: str, owner: str, entity: str) -> Response:
        for entry in _matching(droplist, _scope(scope), owner, entity):
            droplist.remove(entry)
        return Response(status_code=NO_CONTENT)

    # Each entry route twice, as James: with an owner segment, and without one (owner "").
    @api.put("/droplist/{scope}/{entity}", status_code=NO_CONTENT, summary="Deny a sender globally")
    def put_global(scope: str, entity: str) -> Response:
        return add(scope, "", entity)

    @api.put("/droplist/{scope}/{owner}/{entity}", status_code=NO_CONTENT,
             summary="Deny a sender (address or domain) for a domain or a user")
    def put_owned(scope: str, owner: str, entity: str) -> Response:
        return add(scope, owner, entity)

    @api.head("/droplist/{scope}/{entity}", summary="204 if the sender is denied globally, 404 otherwise")
    def head_global(scope: str, entity: str) -> Response:
        return exists(scope, "", entity)

    @api.head("/droplist/{scope}/{owner}/{entity}", summary="204 if the sender is denied, 404 otherwise")
    def head_owned(scope: str, owner: str, entity: str) -> Response:
        return exists(scope, owner, entity)

    @api.delete("/droplist/{scope}/{entity}", status_code=NO_CONTENT, summary="Stop denying a sender globally")
    def delete_global(scope: str, entity: str) -> Response:
        return remove(scope, "", entity)

    @api.delete("/droplist/{scope}/{owner}/{entity}", status_code=NO_CONTENT, summary="Stop denying a sender")
    def delete_owned(scope: str, owner: str, entity: str) -> Response:
        return remove(scope, owner, entity)

    return api


def _scope(raw: str) -> OwnerScope:
    try:
        return OwnerScope(raw.upper())
    except ValueError:
        raise bad_request(f"OwnerScope '{raw}' is invalid. Supported values are [GLOBAL, DOMAIN, USER]",
                          "Invalid OwnerScope") from None


def _entity_type(raw: str | None) -> DeniedEntityType | None:
    if not raw:
        return None
    try:
        return DeniedEntityType(raw.upper())
    except ValueError:
        raise bad_request(f"DeniedEntityType '{raw}' is invalid. Supported values are [DOMAIN, ADDRESS]",
                          "Invalid DeniedEntityType") from None


def _new_entry(scope: OwnerScope, owner: str, entity: str) -> DropListEntry:
    """James's ``getDropListEntry``: the owner checked for its scope (the global scope has none)."""
    stored_owner = "" if scope == OwnerScope.GLOBAL else (
        _domain(owner).name if scope == OwnerScope.DOMAIN else str(_address(owner)))
    if "@" in entity:
        return DropListEntry(scope, stored_owner, DeniedEntityType.ADDRESS, str(_address(entity)))
    return DropListEntry(scope, stored_owner, DeniedEntityType.DOMAIN, _domain(entity).name)


def _domain(raw: str) -> Domain:
    try:
        return validation.domain(raw)
    except InvalidAddress as exc:
        raise bad_request(str(exc), f"Invalid domain {raw}") from exc


def _address(raw: str) -> MailAddress:
    try:
        return validation.address(raw)
    except InvalidAddress as exc:
        raise bad_request(str(exc), f"Invalid mail address {raw}") from exc


def _lookup_owner(scope: OwnerScope, raw: str) -> str:
    """The stored form of an owner when it parses, else the text as given (James compares text)."""
    if scope == OwnerScope.GLOBAL or not raw:
        return raw
    try:
        return Domain.of(raw).name if scope == OwnerScope.DOMAIN else str(MailAddress.of(raw))
    except InvalidAddress:
        return raw


def _lookup_entity(raw: str) -> set[str]:
    forms = {raw}
    try:
        forms.add(str(MailAddress.of(raw)) if "@" in raw else Domain.of(raw).name)
    except InvalidAddress:
        pass
    return forms


def _matching(droplist: DropList, scope: OwnerScope, owner: str, entity: str) -> list[DropListEntry]:
    forms = _lookup_entity(entity)
    return [e for e in droplist.list(scope, _lookup_owner(scope, owner)) if e.denied_entity in forms]
