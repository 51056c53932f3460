"""``create_app``: the WebAdmin FastAPI application from a ``WebAdminContext``.

One HTTP middleware wraps every request, outermost first: James's logging context (``ip``,
``host``, ``verb``, ``protocol=webadmin``, ``action``, ``user``), authentication (plain-text
401/403, through the authentication throttle: 429 with ``Retry-After``), the per-route timer,
and the last-resort 500 in James's JSON error shape.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response
from fastapi.responses import PlainTextResponse

from mailserver import __version__
from mailserver.maintenance.health_check import MaintenanceHealthCheck
from mailserver.observability.health import HealthCheckRunner
from mailserver.observability.logging import mdc
from mailserver.security.auth_throttle import AuthThrottle
from mailserver.webadmin import auth_throttling, docs, errors
from mailserver.webadmin.auth import Authenticator, is_public
from mailserver.webadmin.context import WebAdminContext
from mailserver.webadmin.header_limits import HeaderLimitsMiddleware
from mailserver.webadmin.json_body import JsonBodyMiddleware
from mailserver.webadmin.routes import (
    address,
    cassandra_version,
    delegation,
    deleted_messages,
    dlp,
    domains,
    droplist,
    event_bus_groups,
    event_dead_letters,
    expire_messages,
    health,
    identities,
    jmap_uploads,
    mail_queues,
    mail_repositories,
    maintenance,
    mappings,
    procedures,
    quotas,
    servers,
    sieve_quota,
    tasks,
    user_data,
    user_mailboxes,
    users,
    vacation,
)

log = logging.getLogger(__name__)


def create_app(ctx: WebAdminContext) -> FastAPI:
    assert ctx.guard is not None and ctx.metrics is not None   # set by WebAdminContext.__post_init__
    guard, metrics = ctx.guard, ctx.metrics
    # FastAPI's own /docs and /redoc load their assets from public CDNs: docs.install serves /docs offline.
    app = FastAPI(title="mailserver WebAdmin", version=__version__, docs_url=None, redoc_url=None,
                  description="Apache James compatible WebAdmin API of the distributed mail server.")
    app.state.ctx = ctx
    errors.install(app)
    docs.install(app, enabled=ctx.docs)
    app.add_middleware(JsonBodyMiddleware)

    checks = list(ctx.health_checks)
    if not any(isinstance(c, MaintenanceHealthCheck) for c in checks):
        checks.append(MaintenanceHealthCheck(guard))
    runner = HealthCheckRunner(checks, timeout=ctx.health_timeout)
    app.state.health_runner = runner
    app.router.add_event_handler("shutdown", runner.close)
    metrics.track_maintenance(guard.state)

    app.include_router(health.router(runner, metrics))
    app.include_router(domains.router(ctx.domains, ctx.rrt, ctx.users))
    app.include_router(users.router(ctx.users, ctx.rrt))
    app.include_router(delegation.router(ctx.users, ctx.delegation))
    app.include_router(address.router(ctx.domains, ctx.users, ctx.rrt))
    app.include_router(mappings.router(ctx.domains, ctx.rrt))
    app.include_router(maintenance.router(ctx.maintenance, guard))
    if ctx.connections is not None:
        app.include_router(servers.router(ctx.connections))
    if ctx.droplist is not None:
        app.include_router(droplist.router(ctx.droplist))
    if ctx.dlp is not None:
        app.include_router(dlp.router(ctx.dlp, ctx.domains))
    if ctx.identities is not None:
        app.include_router(identities.router(ctx.identities, ctx.users))
    if ctx.vacations is not None:
        app.include_router(vacation.router(ctx.vacations, ctx.users))
    if ctx.sieve_quotas is not None:
        app.include_router(sieve_quota.router(ctx.sieve_quotas, ctx.users))
    if ctx.tasks is not None:
        app.include_router(tasks.router(ctx.tasks))
    if ctx.queues is not None:
        app.include_router(mail_queues.router(ctx.queues, ctx.tasks))
    if ctx.repositories is not None:
        app.include_router(mail_repositories.router(ctx.repositories, ctx.tasks, ctx.queues, ctx.contents))
    if ctx.schema_versions is not None:
        app.include_router(cassandra_version.router(ctx.schema_versions, ctx.tasks, ctx.dag_runs))
    if ctx.mailboxes is not None:
        app.include_router(user_mailboxes.router(ctx.mailboxes, ctx.users, ctx.tasks))
        app.include_router(quotas.router(ctx.mailboxes.quota, ctx.users, ctx.domains))
    if ctx.tasks is not None:   # the maintenance procedures: DAG runs (503 while Airflow is not configured)
        subscribe_all = procedures.subscribe_all_task(ctx.mailboxes, ctx.subscriptions)
        app.include_router(procedures.router(ctx.tasks, ctx.dag_runs, ctx.users, subscribe_all,
                                             procedures.in_process_mailboxes_tasks(ctx.mailboxes)))
        app.include_router(user_data.router(ctx.user_data_parts(), ctx.domains, ctx.tasks))
        if ctx.mailboxes is not None:
            app.include_router(expire_messages.router(ctx.mailboxes, ctx.users, ctx.tasks))
        if ctx.uploads is not None:
            app.include_router(jmap_uploads.router(ctx.uploads, ctx.tasks))
    # The event bus: always served, 503 where this context lacks a part (as the procedures without Airflow).
    app.include_router(event_dead_letters.router(ctx.dead_letters, ctx.bus, ctx.tasks))
    app.include_router(event_bus_groups.router(ctx.required_groups, ctx.registered_groups, ctx.topology, ctx.tasks))
    app.include_router(deleted_messages.router(ctx.vault, ctx.users, ctx.tasks))

    @app.get("/metrics", tags=["metrics"], summary="Prometheus exposition (public)")
    def scrape() -> Response:
        return Response(metrics.exposition(), media_type=metrics.content_type)

    authenticator = Authenticator(ctx.auth)
    throttle = ctx.auth_throttle or AuthThrottle.off()

    @app.middleware("http")
    async def per_request(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        ip = request.headers.get("x-real-ip") or (request.client.host if request.client else None)
        path, method = request.url.path, request.method
        with mdc(protocol="webadmin", ip=ip, host=request.url.hostname, verb=method, action=path):
            principal = None
            if not is_public(method, path):
                peer = request.client.host if request.client else None   # not X-Real-IP: the client sets it
                decision = await auth_throttling.authorize(authenticator, throttle, method, request.headers, peer)
                if not decision.allowed:
                    log.info("webadmin %s %s refused: %s", method, path, decision.body)
                    return PlainTextResponse(decision.body, status_code=decision.status, headers=decision.headers)
                principal = decision.principal
            request.state.principal = principal
            start = time.perf_counter()
            status = 500
            with mdc(user=principal):
                try:
                    response = await call_next(request)
                    status = response.status_code
                    return response
                except Exception as exc:
                    log.error("unexpected error on %s %s", method, path, exc_info=exc)
                    return errors.error_response(500, errors.SERVER_ERROR,
                                                 "WebAdmin encountered an unexpected internal error",
                                                 f"{type(exc).__name__}: {exc}")
                finally:
                    route = request.scope.get("route")
                    template = getattr(route, "path", None) or "unmatched"
                    metrics.requests.labels(method, template, str(status)).observe(time.perf_counter() - start)

    # Outermost (added last): an oversized head is refused before logging context, auth or any route.
    app.add_middleware(HeaderLimitsMiddleware, max_header_bytes=ctx.max_header_bytes, max_headers=ctx.max_headers)
    return app
