"""``Core/echo`` (RFC 8620 4): the arguments, returned as they came."""

from __future__ import annotations

from typing import Any

from mailserver.jmap.account import CallContext


def echo(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    return arguments
