"""``/healthcheck`` routes (webadmin reference §2): public, relaxed vs ``strict``, ``check=`` selection."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from mailserver.observability.health import HealthCheckRunner, Result, Status, worst
from mailserver.observability.metrics import Metrics
from mailserver.webadmin.errors import not_found


def router(runner: HealthCheckRunner, metrics: Metrics) -> APIRouter:
    api = APIRouter(tags=["healthcheck"])

    def run(checks: list | None = None) -> list[Result]:
        results = runner.run(checks)
        for r in results:
            metrics.health.labels(r.component).set(r.status.severity)
        return results

    @api.get("/healthcheck", summary="Aggregate status of all (or the selected) components")
    def all_checks(check: Annotated[list[str] | None, Query()] = None, strict: str | None = None) -> JSONResponse:
        selected = None
        if check:
            missing = [name for name in check if runner.find(name) is None]
            if missing:
                raise not_found(f"Components with name {', '.join(missing)} cannot be found")
            selected = [runner.find(name) for name in check]
        results = run(selected)
        status = worst(r.status for r in results)
        return JSONResponse({"status": status.value, "checks": [r.to_json() for r in results]},
                            status_code=_code(status, strict is not None))

    @api.get("/healthcheck/checks", summary="Names of the registered components")
    def names() -> list[dict[str, str]]:
        return [{k: v for k, v in Result(name, Status.HEALTHY).to_json().items()
                 if k in ("componentName", "escapedComponentName")} for name in runner.names()]

    @api.get("/healthcheck/checks/{component_name}", summary="Status of one component")
    def one(component_name: str, strict: str | None = Query(None)) -> JSONResponse:
        check = runner.find(component_name)
        if check is None:
            raise not_found(f"Component with name {component_name} cannot be found")
        result = run([check])[0]
        return JSONResponse(result.to_json(), status_code=_code(result.status, strict is not None))

    return api


def _code(status: Status, strict: bool) -> int:
    # Relaxed (default): degraded still answers 200; strict: only healthy does.
    if status is Status.HEALTHY or (status is Status.DEGRADED and not strict):
        return 200
    return 503
