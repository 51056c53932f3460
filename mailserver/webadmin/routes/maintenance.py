"""``/maintenance``: our cluster-wide maintenance switch (an extension; James has none, §15)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Body, Request
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr

from mailserver.maintenance.api import MaintenanceStore
from mailserver.maintenance.guard import MaintenanceGuard

MAX_DURATION_SECONDS = 7 * 24 * 3600


def _unicode(text: str) -> str:
    """The reason is stored, then answered by every GET and logged: text UTF-8 cannot carry (a lone
    surrogate, ``"\\ud800"`` in the JSON body) is refused now rather than failing each later answer."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be Unicode text (a lone surrogate is not)") from None
    return text


class MaintenanceRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: Annotated[StrictStr, AfterValidator(_unicode)] | None = None
    # The cluster leaves maintenance by itself this many seconds from now (a window a crashed
    # client cannot keep open); absent: until switched off. At most a week: beyond is a typo.
    maxDurationSeconds: StrictInt | None = Field(None, gt=0, le=MAX_DURATION_SECONDS)


def router(store: MaintenanceStore, guard: MaintenanceGuard) -> APIRouter:
    api = APIRouter(tags=["maintenance"])

    @api.get("/maintenance", summary="Current maintenance state (read from the store, not the cache)")
    def get_state() -> dict[str, object]:
        return store.get().to_json()

    @api.put("/maintenance", summary="Switch maintenance mode on, cluster-wide")
    def enable(request: Request, body: Annotated[MaintenanceRequest | None, Body()] = None) -> dict[str, object]:
        seconds = body.maxDurationSeconds if body else None
        state = store.enable(body.reason if body else None, getattr(request.state, "principal", None),
                             timedelta(seconds=seconds) if seconds is not None else None)
        guard.invalidate()   # effective on this node at once; other nodes within the guard's TTL
        return state.to_json()

    @api.delete("/maintenance", summary="Switch maintenance mode off, cluster-wide")
    def disable(request: Request) -> dict[str, object]:
        state = store.disable(getattr(request.state, "principal", None))
        guard.invalidate()
        return state.to_json()

    return api
