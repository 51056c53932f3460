"""``/address/groups``, ``/address/forwards``, ``/address/aliases`` (webadmin reference §6.1-6.3)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from mailserver.domains.api import DomainList
from mailserver.rrt.api import RecipientRewriteTable
from mailserver.rrt.mapping import Mapping, MappingSource, MappingType
from mailserver.users.api import UsersRepository
from mailserver.webadmin.errors import bad_request, conflict, not_found
from mailserver.webadmin.routes.rrt_support import (
    check_no_loop,
    is_user,
    make_rewriter,
    new_address,
    parse_address,
    source_json,
    write,
)

NO_CONTENT = 204


def router(domains: DomainList, users: UsersRepository, rrt: RecipientRewriteTable) -> APIRouter:
    api = APIRouter(tags=["address"])
    rewriter = make_rewriter(rrt, domains)

    def sources_of(kind: MappingType) -> list[MappingSource]:
        return [s for s, ms in rrt.get_all_mappings().items() if any(m.type is kind for m in ms)]

    def typed(address: object, kind: MappingType) -> list[Mapping]:
        return [m for m in rrt.get_stored_mappings(str(address)) if m.type is kind]

    # -- groups ---------------------------------------------------------------------------------
    @api.get("/address/groups", summary="Addresses that are groups")
    def groups() -> list[str]:
        return sorted(source_json(s) for s in sources_of(MappingType.GROUP))

    @api.delete("/address/groups", status_code=NO_CONTENT, summary="Remove every group")
    def delete_groups() -> Response:
        for source, mappings in rrt.get_all_mappings().items():
            for m in mappings:
                if m.type is MappingType.GROUP:
                    rrt.remove_mapping(source, m)
        return Response(status_code=NO_CONTENT)

    @api.get("/address/groups/{group}", summary="Members of a group")
    def members(group: str) -> list[str]:
        mappings = typed(parse_address(group, "group address"), MappingType.GROUP)
        if not mappings:
            raise not_found("The group does not exist")
        return sorted(m.value for m in mappings)

    @api.put("/address/groups/{group}/{member}", status_code=NO_CONTENT, summary="Add a member (creates the group)")
    def add_member(group: str, member: str) -> Response:
        g, m = new_address(group, "group address"), new_address(member, "member address")
        others = [x for x in rrt.get_stored_mappings(str(g)) if x.type is not MappingType.GROUP]
        if is_user(users, g) or others:
            raise conflict("Requested group address is already used for another purpose",
                           f"{g} is {'a user' if is_user(users, g) else 'the source of other mappings'}")
        check_no_loop(rewriter, g, m)
        write(lambda: rrt.add_group(g, m))
        return Response(status_code=NO_CONTENT)

    @api.delete("/address/groups/{group}/{member}", status_code=NO_CONTENT, summary="Remove a member")
    def remove_member(group: str, member: str) -> Response:
        g, m = parse_address(group, "group address"), parse_address(member, "member address")
        rrt.remove_mapping(g, Mapping.group(m))
        return Response(status_code=NO_CONTENT)

    @api.put("/address/groups/{group}", include_in_schema=False)
    @api.delete("/address/groups/{group}", include_in_schema=False)
    def group_without_member(group: str) -> Response:
        raise bad_request("A member address is required: /address/groups/{group}/{member}")

    # -- forwards -------------------------------------------------------------------------------
    @api.get("/address/forwards", summary="Users having forwards")
    def forwards() -> list[str]:
        return sorted(source_json(s) for s in sources_of(MappingType.FORWARD))

    @api.get("/address/forwards/{user}", summary="Forward destinations of a user")
    def forward_targets(user: str) -> list[dict[str, str]]:
        mappings = typed(parse_address(user, "base address"), MappingType.FORWARD)
        if not mappings:
            raise not_found("The base user does not exist or has no forward")
        return [{"mailAddress": m.value} for m in mappings]

    @api.put("/address/forwards/{user}/targets/{destination}", status_code=NO_CONTENT, summary="Add a forward")
    def add_forward(user: str, destination: str) -> Response:
        base, dest = parse_address(user, "base address"), new_address(destination, "destination address")
        if not is_user(users, base):
            raise not_found("Requested base forward address does not correspond to a user", str(base))
        if str(base).lower() != str(dest).lower():   # forwarding to oneself keeps a local copy: no loop
            check_no_loop(rewriter, base, dest)
        write(lambda: rrt.add_forward(base, dest))
        return Response(status_code=NO_CONTENT)

    @api.delete("/address/forwards/{user}/targets/{destination}", status_code=NO_CONTENT, summary="Remove a forward")
    def remove_forward(user: str, destination: str) -> Response:
        base, dest = parse_address(user, "base address"), parse_address(destination, "destination address")
        rrt.remove_mapping(base, Mapping.forward(dest))
        return Response(status_code=NO_CONTENT)

    # -- aliases --------------------------------------------------------------------------------
    @api.get("/address/aliases", summary="Users having aliases")
    def aliased_users() -> list[str]:
        return sorted({m.value for ms in rrt.get_all_mappings().values() for m in ms if m.type is MappingType.ALIAS})

    @api.get("/address/aliases/{user}", summary="Aliases of a user")
    def aliases(user: str) -> list[dict[str, str]]:
        target = parse_address(user, "user address")
        return [{"source": source_json(s)} for s in rrt.list_sources(Mapping.alias(target))]

    @api.put("/address/aliases/{user}/sources/{alias}", status_code=NO_CONTENT, summary="Add an alias")
    def add_alias(user: str, alias: str) -> Response:
        target, source = new_address(user, "user address"), new_address(alias, "alias address")
        if str(target).lower() == str(source).lower():
            raise bad_request("Source and destination can't be the same!")
        if is_user(users, source):
            raise conflict("The alias source exists as an user already", str(source))
        check_no_loop(rewriter, source, target)
        write(lambda: rrt.add_alias(source, target))
        return Response(status_code=NO_CONTENT)

    @api.delete("/address/aliases/{user}/sources/{alias}", status_code=NO_CONTENT, summary="Remove an alias")
    def remove_alias(user: str, alias: str) -> Response:
        target, source = parse_address(user, "user address"), parse_address(alias, "alias address")
        rrt.remove_mapping(source, Mapping.alias(target))
        return Response(status_code=NO_CONTENT)

    return api
