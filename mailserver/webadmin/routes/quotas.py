"""``/quota`` (webadmin reference §7): mailbox quota limits of users, domains and the whole server.

James's ``UserQuotaRoutes``, ``DomainQuotaRoutes`` and ``GlobalQuotaRoutes`` (code, not docs):

* ``GET .../count`` and ``.../size`` of a user answer the *computed* limit (user, else domain,
  else global) as a bare number, 204 when no scope sets one; those of a domain answer the
  domain's own limit, those of ``/quota`` the global one.
* ``PUT`` of ``{"count", "size"}`` sets both types; a null or absent field removes that limit.
* Unknown user: 404 "User not found"; unknown domain: 404 "Domain not found"; domain routes
  answer 405 when virtual hosting is off (James). Values: ``mailserver.webadmin.quota_json``.
* ``GET /quota/users`` scans the users, as James's ``ScanningQuotaSearcher`` (the distributed
  server reads an OpenSearch index instead): filters ``minOccupationRatio`` <= max ratio <=
  ``maxOccupationRatio`` and ``domain``, sorted by user name, then ``offset`` and ``limit``.

``POST /quota/users?task=RecomputeCurrentQuotas`` is a maintenance procedure (``procedures.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from mailserver.domains.api import DomainList
from mailserver.mailbox.store import QuotaStore
from mailserver.model.address import Domain, InvalidAddress, Username
from mailserver.model.quota import LimitKey, QuotaLimits, QuotaRoot, QuotaScope, QuotaType, effective_limits
from mailserver.users.api import UsersRepository
from mailserver.webadmin import quota_json
from mailserver.webadmin.errors import WRONG_STATE, WebAdminError, bad_request, not_found
from mailserver.webadmin.routes import params
from mailserver.webadmin.routes.domains import parse_domain
from mailserver.webadmin.routes.users import stored_username

NO_CONTENT = 204
TYPES = {"count": QuotaType.COUNT, "size": QuotaType.SIZE}
NO_VIRTUAL_HOSTING = ("Domain Quota configuration not supported when virtual hosting is desactivated. "
                      "Please use global quota configuration instead")   # sic, James's wording


def _no_content() -> Response:
    return Response(status_code=NO_CONTENT)


def _bare(value: int | None) -> Response:
    return _no_content() if value is None else JSONResponse(value)


class UserQuotas:
    """What the user routes read: one user's limits per scope, the computed ones and the usage."""

    def __init__(self, quota: QuotaStore) -> None:
        self.quota = quota

    def details(self, user: Username) -> dict[str, Any]:
        root = QuotaRoot.for_user(user)
        by_scope = self.quota.limits_by_scope(root)
        return quota_json.details_json(by_scope, effective_limits(by_scope), self.quota.current(root))

    def max_ratio(self, user: Username) -> float:
        root = QuotaRoot.for_user(user)
        return quota_json.max_ratio(self.quota.current(root), self.quota.limits(root))


def router(quota: QuotaStore, users: UsersRepository, domains: DomainList) -> APIRouter:
    api = APIRouter(tags=["quota"])
    user_quotas = UserQuotas(quota)

    def existing_user(raw: str) -> Username:
        user = stored_username(users, raw)
        if not users.contains(user):
            raise not_found("User not found")
        return user

    def existing_domain(raw: str) -> Domain:
        if not users.virtual_hosting:
            raise WebAdminError(405, NO_VIRTUAL_HOSTING, None, WRONG_STATE)
        domain = parse_domain(raw)
        if not domains.contains(domain):
            raise not_found("Domain not found")
        return domain

    # ------------------------------------------------------------------ users
    @api.get("/quota/users", summary="Users with their quota details (?minOccupationRatio, ?maxOccupationRatio, "
                                     "?domain, ?limit, ?offset), sorted by user name")
    def list_users(request: Request) -> list[dict[str, Any]]:
        query = request.query_params
        upper = params.positive_double(query.get("maxOccupationRatio"), "maxOccupationRatio")
        lower = params.positive_double(query.get("minOccupationRatio"), "minOccupationRatio")
        domain = _query_domain(query.get("domain"))
        count = params.limit(query.get("limit"))
        skip = params.offset(query.get("offset"))
        found = sorted((u for u in users.list_users() if domain is None or u.domain == domain), key=str)
        if lower is not None or upper is not None:
            ratios = {u: user_quotas.max_ratio(u) for u in found}
            found = [u for u in found
                     if (lower is None or ratios[u] >= lower) and (upper is None or ratios[u] <= upper)]
        page = found[skip:] if count is None else found[skip:skip + count]
        return [{"username": str(u), "detail": user_quotas.details(u)} for u in page]

    @api.get("/quota/users/{username}", summary="A user's limits per scope, computed limits and occupation")
    def get_user(username: str) -> dict[str, Any]:
        return user_quotas.details(existing_user(username))

    @api.put("/quota/users/{username}", status_code=NO_CONTENT,
             summary='Set {"count": n|-1|null, "size": n|-1|null} for a user (null removes)')
    async def put_user(username: str, request: Request) -> Response:
        user = await run_in_threadpool(existing_user, username)
        limits = quota_json.parse_limits(await request.body())
        await run_in_threadpool(quota.set_limits, LimitKey.user(QuotaRoot.for_user(user)), limits)
        return _no_content()

    for name, quota_type in TYPES.items():
        _user_type_routes(api, name, quota_type, quota, existing_user)

    # ------------------------------------------------------------------ domains
    @api.get("/quota/domains/{domain}", summary="A domain's limits, the global ones and the computed ones")
    def get_domain(domain: str) -> dict[str, Any]:
        d = existing_domain(domain)
        own, glob = quota.defined_limits(LimitKey.domain(d)), quota.defined_limits(LimitKey.global_())
        computed = effective_limits({QuotaScope.DOMAIN: own, QuotaScope.GLOBAL: glob})
        return {"global": quota_json.limits_json(glob), "domain": quota_json.limits_json(own),
                "computed": quota_json.limits_json(computed)}

    @api.put("/quota/domains/{domain}", status_code=NO_CONTENT,
             summary='Set {"count", "size"} for a domain (null removes)')
    async def put_domain(domain: str, request: Request) -> Response:
        d = await run_in_threadpool(existing_domain, domain)
        limits = quota_json.parse_limits(await request.body())
        await run_in_threadpool(quota.set_limits, LimitKey.domain(d), limits)
        return _no_content()

    for name, quota_type in TYPES.items():
        _domain_type_routes(api, name, quota_type, quota, existing_domain)

    # ------------------------------------------------------------------ global
    @api.get("/quota", summary="The global count and size limits")
    def get_global() -> dict[str, int | None]:
        return quota_json.limits_json(quota.defined_limits(LimitKey.global_()))

    @api.put("/quota", status_code=NO_CONTENT, summary='Set the global {"count", "size"} (null removes)')
    async def put_global(request: Request) -> Response:
        limits = quota_json.parse_limits(await request.body())
        await run_in_threadpool(quota.set_limits, LimitKey.global_(), limits)
        return _no_content()

    for name, quota_type in TYPES.items():
        _global_type_routes(api, name, quota_type, quota)

    return api


def _user_type_routes(api: APIRouter, name: str, quota_type: QuotaType, quota: QuotaStore,
                      existing_user: Callable[[str], Username]) -> None:
    def key(username: str) -> LimitKey:
        return LimitKey.user(QuotaRoot.for_user(existing_user(username)))

    @api.get(f"/quota/users/{{username}}/{name}", summary=f"The user's computed {name} limit (204: none)")
    def get_one(username: str) -> Response:
        return _bare(_one(quota.limits(QuotaRoot.for_user(existing_user(username))), quota_type))

    @api.put(f"/quota/users/{{username}}/{name}", status_code=NO_CONTENT,
             summary=f"Set the user's {name} limit (bare number, -1 = unlimited)")
    async def put_one(username: str, request: Request) -> Response:
        where = await run_in_threadpool(key, username)
        await run_in_threadpool(quota.set_limit, where, quota_type, quota_json.parse_bare(await request.body(), name))
        return _no_content()

    @api.delete(f"/quota/users/{{username}}/{name}", status_code=NO_CONTENT,
                summary=f"Remove the user's {name} limit (the domain's or the global one applies)")
    def delete_one(username: str) -> Response:
        quota.set_limit(key(username), quota_type, None)
        return _no_content()


def _domain_type_routes(api: APIRouter, name: str, quota_type: QuotaType, quota: QuotaStore,
                        existing_domain: Callable[[str], Domain]) -> None:
    @api.get(f"/quota/domains/{{domain}}/{name}", summary=f"The domain's own {name} limit (204: not set)")
    def get_one(domain: str) -> Response:
        return _bare(_one(quota.defined_limits(LimitKey.domain(existing_domain(domain))), quota_type))

    @api.put(f"/quota/domains/{{domain}}/{name}", status_code=NO_CONTENT,
             summary=f"Set the domain's {name} limit (bare number, -1 = unlimited)")
    async def put_one(domain: str, request: Request) -> Response:
        d = await run_in_threadpool(existing_domain, domain)
        value = quota_json.parse_bare(await request.body(), name)
        await run_in_threadpool(quota.set_limit, LimitKey.domain(d), quota_type, value)
        return _no_content()

    @api.delete(f"/quota/domains/{{domain}}/{name}", status_code=NO_CONTENT,
                summary=f"Remove the domain's {name} limit")
    def delete_one(domain: str) -> Response:
        quota.set_limit(LimitKey.domain(existing_domain(domain)), quota_type, None)
        return _no_content()


def _global_type_routes(api: APIRouter, name: str, quota_type: QuotaType, quota: QuotaStore) -> None:
    @api.get(f"/quota/{name}", summary=f"The global {name} limit (204: not set)")
    def get_one() -> Response:
        return _bare(_one(quota.defined_limits(LimitKey.global_()), quota_type))

    @api.put(f"/quota/{name}", status_code=NO_CONTENT, summary=f"Set the global {name} limit (-1 = unlimited)")
    async def put_one(request: Request) -> Response:
        value = quota_json.parse_bare(await request.body(), name)
        await run_in_threadpool(quota.set_limit, LimitKey.global_(), quota_type, value)
        return _no_content()

    @api.delete(f"/quota/{name}", status_code=NO_CONTENT, summary=f"Remove the global {name} limit")
    def delete_one() -> Response:
        quota.set_limit(LimitKey.global_(), quota_type, None)
        return _no_content()


def _one(limits: QuotaLimits, quota_type: QuotaType) -> int | None:
    return limits.count if quota_type is QuotaType.COUNT else limits.size


def _query_domain(raw: str | None) -> Domain | None:
    if raw is None:
        return None
    try:
        return Domain.of(raw)
    except InvalidAddress as exc:
        raise bad_request(str(exc)) from exc
