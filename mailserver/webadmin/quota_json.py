"""James's quota values on the wire (webadmin reference §7): request bodies in, DTOs out.

* A limit is a number; ``-1`` is unlimited; ``null`` (JSON) or 204 (bare routes) is "not set".
* ``/count`` and ``/size`` take a bare number (Java's ``Long.parseLong``: no spaces, no
  decimals); anything below -1 or not a number is 400 "Invalid quota. Need to be an integer value
  greater or equal to -1".
* The ``{"count", "size"}`` body: each field a whole number or null (absent = null = remove that
  limit); not JSON, not an object, an unknown field or a non-integer value is 400 "JSON payload of
  the request is not valid"; a value below -1 is the 400 above. Nothing is written on a 400.
* A limit is a Java ``long`` in James: a value past 2^63-1 (or of thousands of digits) is the
  400 of its kind, its details naming the field and the bound.
* Occupation ratios are ``used / limit`` (0 when unlimited or not set); a limit of 0 gives
  Java's ``NaN`` (nothing used) or ``Infinity``, which James's Jackson writes as the strings
  ``"NaN"`` and ``"Infinity"``.
"""

from __future__ import annotations

import math
from typing import Any

from mailserver.model.java_numbers import (
    JAVA_LONG_MAX,
    NotAnInteger,
    OutOfRange,
    is_integer,
    is_long,
    loads,
    parse_integer,
)
from mailserver.model.quota import UNLIMITED, QuotaLimits, QuotaScope, QuotaUsage
from mailserver.webadmin.errors import WebAdminError
from mailserver.webadmin.json_payload import INVALID_JSON

INVALID_QUOTA = "Invalid quota. Need to be an integer value greater or equal to -1"
_FIELDS = ("count", "size")


def parse_bare(body: bytes, name: str) -> int:
    """The body of ``PUT .../count`` or ``.../size`` (``name``): -1 (unlimited) or a non-negative number."""
    text = body.decode("utf-8", errors="replace")
    try:
        value = parse_integer(text)
    except NotAnInteger:
        raise WebAdminError(400, INVALID_QUOTA, f'For input string: "{text}"') from None
    except OutOfRange:
        raise WebAdminError(400, INVALID_QUOTA, _too_large(name)) from None
    if value < UNLIMITED:
        raise WebAdminError(400, INVALID_QUOTA)   # no details, as James
    return value


def parse_limits(body: bytes) -> QuotaLimits:
    """The body of ``PUT /quota/users/{u}``, ``/quota/domains/{d}`` and ``/quota``."""
    try:
        data = loads(body or b"")
    except ValueError as exc:
        raise WebAdminError(400, INVALID_JSON, str(exc)) from exc
    if not isinstance(data, dict):
        raise WebAdminError(400, INVALID_JSON, f"expected an object with 'count' and 'size', got {body[:100]!r}")
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise WebAdminError(400, INVALID_JSON, f"unknown field(s) {', '.join(unknown)}: expected 'count' and 'size'")
    values = {}
    for name in _FIELDS:
        value = data.get(name)
        if is_integer(value) and not is_long(value):
            raise WebAdminError(400, INVALID_JSON, _too_large(name))
        if value is not None and not is_long(value):
            raise WebAdminError(400, INVALID_JSON, f"'{name}' must be a whole number or null, not {value!r}")
        values[name] = None if value is None else _checked(value)
    return QuotaLimits(values["count"], values["size"])


def _too_large(name: str) -> str:
    return f"'{name}' must be at most {JAVA_LONG_MAX} (a Java long; -1 means unlimited)"


def _checked(value: int) -> int:
    if value < UNLIMITED:
        raise WebAdminError(400, INVALID_QUOTA, f"{value} is below -1 (-1 means unlimited)")
    return value


def limits_json(limits: QuotaLimits) -> dict[str, int | None]:
    return {"count": limits.count, "size": limits.size}


def scope_json(limits: QuotaLimits | None) -> dict[str, int | None] | None:
    """A scope that defines nothing is ``null`` (James's details map has no entry for it)."""
    if limits is None or (limits.count is None and limits.size is None):
        return None
    return limits_json(limits)


def ratio(used: int, limit: int | None) -> float:
    """Java's ``Quota.getRatio``: 0 when unlimited (or not set), else used / limit (NaN, inf on 0)."""
    if limit is None or limit == UNLIMITED:
        return 0.0
    if limit == 0:
        return math.nan if used == 0 else math.inf
    return used / limit


def max_ratio(usage: QuotaUsage, limits: QuotaLimits) -> float:
    size, count = ratio(usage.size, limits.size), ratio(usage.count, limits.count)
    return math.nan if math.isnan(size) or math.isnan(count) else max(size, count)   # Java's Math.max


def _double(value: float) -> float | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity"
    return value


def details_json(by_scope: dict[QuotaScope, QuotaLimits], effective: QuotaLimits,
                 usage: QuotaUsage) -> dict[str, Any]:
    """``GET /quota/users/{u}``: each scope, the computed limits and the occupation."""
    return {"global": scope_json(by_scope.get(QuotaScope.GLOBAL)),
            "domain": scope_json(by_scope.get(QuotaScope.DOMAIN)),
            "user": scope_json(by_scope.get(QuotaScope.USER)),
            "computed": limits_json(effective),
            "occupation": {"size": usage.size, "count": usage.count,
                           "ratio": {"size": _double(ratio(usage.size, effective.size)),
                                     "count": _double(ratio(usage.count, effective.count)),
                                     "max": _double(max_ratio(usage, effective))}}}
