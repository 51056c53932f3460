"""``/domainMappings``, ``/mappings/regex``, ``/mappings/address`` and the whole-table ``/mappings`` views
(webadmin reference §6.4-6.6)."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from mailserver.domains.api import DomainList
from mailserver.model.address import InvalidAddress
from mailserver.rrt.api import RecipientRewriteTable
from mailserver.rrt.mapping import InvalidMapping, Mapping, MappingSource, MappingType
from mailserver.webadmin.errors import bad_request, not_found
from mailserver.webadmin.routes.domains import new_domain, parse_domain
from mailserver.webadmin.routes.rrt_support import (
    check_no_loop,
    make_rewriter,
    new_address,
    new_mapping,
    new_source,
    parse_address,
    source_json,
    write,
)

NO_CONTENT = 204
TEXT_BODY = {"requestBody": {"content": {"text/plain": {"schema": {"type": "string"}}}, "required": True}}


def parse_source(raw: str) -> MappingSource:
    try:
        return MappingSource.parse(raw)
    except (InvalidAddress, InvalidMapping) as exc:
        raise bad_request(f"Invalid mapping source {raw!r}: {exc}") from exc


def mapping_json(m: Mapping) -> dict[str, str]:
    return {"type": m.type.james_name, "mapping": m.value}


def router(domains: DomainList, rrt: RecipientRewriteTable) -> APIRouter:
    api = APIRouter(tags=["mappings"])
    rewriter = make_rewriter(rrt, domains)

    # -- domain mappings (raw text body = destination domain) ------------------------------------
    @api.get("/domainMappings", summary="All domain mappings")
    def domain_mappings() -> dict[str, list[str]]:
        return {s.domain: [m.value for m in ms if m.type is MappingType.DOMAIN]
                for s, ms in rrt.get_all_mappings().items()
                if s.is_domain and any(m.type is MappingType.DOMAIN for m in ms)}

    @api.get("/domainMappings/{source}", summary="Destinations of one source domain")
    def domain_mapping(source: str) -> list[str]:
        d = parse_domain(source)
        values = [m.value for m in rrt.get_stored_mappings(f"*@{d.name}") if m.type is MappingType.DOMAIN]
        if not values:
            raise not_found(f"Cannot find mappings for {d.name}")
        return values

    async def destination(request: Request, *, new: bool = False) -> str:
        text = (await request.body()).decode("utf-8", "replace").strip()
        (new_domain if new else parse_domain)(text)
        return text

    @api.put("/domainMappings/{source}", status_code=NO_CONTENT, openapi_extra=TEXT_BODY,
             summary="Map a source domain to the destination domain in the body")
    async def add_domain_mapping(source: str, request: Request) -> Response:
        d, dest = new_domain(source), await destination(request, new=True)
        await run_in_threadpool(write, lambda: rrt.add_domain_mapping(d, dest))
        return Response(status_code=NO_CONTENT)

    @api.delete("/domainMappings/{source}", status_code=NO_CONTENT, openapi_extra=TEXT_BODY,
                summary="Remove the mapping to the destination domain in the body")
    async def remove_domain_mapping(source: str, request: Request) -> Response:
        d, dest = parse_domain(source), await destination(request)
        await run_in_threadpool(rrt.remove_mapping, f"*@{d.name}", Mapping.domain(dest))
        return Response(status_code=NO_CONTENT)

    # -- regex and raw address mappings ----------------------------------------------------------
    @api.post("/mappings/regex/{source}/targets/{regex:path}", status_code=NO_CONTENT, summary="Add a regex mapping")
    def add_regex(source: str, regex: str) -> Response:
        s = new_source(source)
        new_mapping(MappingType.REGEX, regex)
        write(lambda: rrt.add_regex_mapping(s, regex))
        return Response(status_code=NO_CONTENT)

    @api.delete("/mappings/regex/{source}/targets/{regex:path}", status_code=NO_CONTENT,
                summary="Remove a regex mapping")
    def remove_regex(source: str, regex: str) -> Response:
        s = parse_source(source)
        rrt.remove_mapping(s, Mapping(MappingType.REGEX, regex))
        return Response(status_code=NO_CONTENT)

    @api.post("/mappings/address/{source}/targets/{destination}", status_code=NO_CONTENT,
              summary="Add an address mapping")
    def add_address(source: str, destination: str) -> Response:
        s, dest = new_address(source, "source address"), new_address(destination, "destination address")
        if str(s).lower() != str(dest).lower():
            check_no_loop(rewriter, s, dest)
        write(lambda: rrt.add_address_mapping(s, dest))
        return Response(status_code=NO_CONTENT)

    @api.delete("/mappings/address/{source}/targets/{destination}", status_code=NO_CONTENT,
                summary="Remove an address mapping")
    def remove_address(source: str, destination: str) -> Response:
        s, dest = parse_address(source, "source address"), parse_address(destination, "destination address")
        rrt.remove_mapping(s, Mapping.address(dest))
        return Response(status_code=NO_CONTENT)

    # -- whole-table views ------------------------------------------------------------------------
    @api.get("/mappings", summary="Every mapping, by source")
    def all_mappings() -> dict[str, list[dict[str, str]]]:
        return {source_json(s): [mapping_json(m) for m in ms] for s, ms in rrt.get_all_mappings().items()}

    @api.put("/mappings", status_code=NO_CONTENT, summary="Bulk import (same shape as GET /mappings)")
    def import_mappings(body: dict[str, list[dict[str, Any]]]) -> Response:
        # Everything is validated before the first write: a bad entry means nothing is imported.
        pairs = []
        for raw_source, entries in body.items():
            source = new_source(raw_source)
            for entry in entries:
                try:
                    kind = MappingType.from_name(str(entry["type"]))
                    value = entry["mapping"]
                except (KeyError, InvalidMapping) as exc:
                    raise bad_request(f"Invalid mapping {json.dumps(entry)} for {raw_source}: {exc}") from exc
                pairs.append((source, new_mapping(kind, value)))
        for source, mapping in pairs:
            rrt.add_mapping(source, mapping)
        return Response(status_code=NO_CONTENT)

    @api.get("/mappings/user/{address}", summary="Mappings stored for one source")
    def user_mappings(address: str) -> list[dict[str, str]]:
        return [mapping_json(m) for m in rrt.get_stored_mappings(parse_source(address))]

    def reverse(address: str, type_: str | None) -> Mapping:
        if type_ is None or not type_.strip():
            raise bad_request("'type' query parameter is compulsory. Supported values are "
                              "[group, forward, address, alias, domain, domainAlias]")
        try:
            mapping = Mapping.of(MappingType.from_name(type_), address)
        except InvalidMapping as exc:
            raise bad_request(str(exc)) from exc
        return mapping

    @api.get("/mappings/sources/{address}", summary="Sources pointing to an address (?type= mandatory)")
    def sources(address: str, type: str | None = Query(None)) -> list[str]:
        mapping = reverse(address, type)
        try:
            return [source_json(s) for s in rrt.list_sources(mapping)]
        except ValueError as exc:
            raise bad_request(str(exc)) from exc

    @api.delete("/mappings/sources/{address}", status_code=NO_CONTENT, summary="Remove the mappings to an address")
    def delete_sources(address: str, type: str | None = Query(None)) -> Response:
        mapping = reverse(address, type)
        try:
            found = rrt.list_sources(mapping)
        except ValueError as exc:
            raise bad_request(str(exc)) from exc
        for s in found:
            rrt.remove_mapping(s, mapping)
        return Response(status_code=NO_CONTENT)

    return api
