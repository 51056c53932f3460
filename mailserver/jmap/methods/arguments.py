"""Reading a method call's arguments, each mistake an ``invalidArguments`` naming the argument."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from mailserver.jmap.errors import MethodError, invalid_arguments

ALLOWED_ID = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def is_id(value: Any) -> bool:
    """An Id (RFC 8620 1.2): 1 to 255 characters of the URL-safe base64 alphabet."""
    return isinstance(value, str) and 0 < len(value) < 256 and set(value) <= ALLOWED_ID


def optional_ids(arguments: dict[str, Any], name: str = "ids") -> list[str] | None:
    value = arguments.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid_arguments(f"{name} must be null or an array of ids")
    return value


def check_get_size(ids: list[str] | None, found: int, maximum: int) -> None:
    """maxObjectsInGet, before anything is read: the ids asked, or all objects when ``ids`` is null."""
    count = len(ids) if ids is not None else found
    if count > maximum:
        raise MethodError("requestTooLarge", f"{count} objects asked, at most {maximum} per call (maxObjectsInGet)")


# James's words for unknown properties differ by method; ``{name}`` and ``{unknown}`` are filled in.
UNKNOWN_PROPERTIES = "unknown {name}: {unknown}"
PROPERTIES_DO_NOT_EXIST = "The following properties [{unknown}] do not exist."


def properties(arguments: dict[str, Any], known: Collection[str], default: Collection[str],
               name: str = "properties", unknown_message: str = UNKNOWN_PROPERTIES) -> list[str]:
    value = arguments.get(name)
    if value is None:
        return list(default)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid_arguments(f"{name} must be null or an array of property names")
    unknown = [p for p in value if p not in known]
    if unknown:
        raise invalid_arguments(unknown_message.format(name=name, unknown=", ".join(unknown)))
    return list(dict.fromkeys(value))


def boolean(arguments: dict[str, Any], name: str, default: bool = False) -> bool:
    value = arguments.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise invalid_arguments(f"{name} must be a boolean")
    return value


def unsigned(arguments: dict[str, Any], name: str, default: int | None) -> int | None:
    value = arguments.get(name, default)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise invalid_arguments(f"{name} must be a non-negative integer")
    return value


def integer(arguments: dict[str, Any], name: str, default: int) -> int:
    value = arguments.get(name, default)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool):
        raise invalid_arguments(f"{name} must be an integer")
    return value


def only(arguments: dict[str, Any], allowed: Collection[str]) -> None:
    unknown = sorted(set(arguments) - set(allowed))
    if unknown:
        raise invalid_arguments(f"unknown arguments: {', '.join(unknown)}")


def set_objects(arguments: dict[str, Any], max_objects: int) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """A ``/set`` call's ``create``, ``update`` (id to PatchObject) and ``destroy`` (RFC 8620 5.3),
    refused as ``requestTooLarge`` beyond ``maxObjectsInSet`` before any is looked at."""
    create = arguments.get("create") or {}
    update = arguments.get("update") or {}
    destroy = arguments.get("destroy") or []
    if not isinstance(create, dict) or not isinstance(update, dict):
        raise invalid_arguments("create and update must be objects")
    if not all(isinstance(p, dict) for p in update.values()):
        raise invalid_arguments("each update must be a patch object")
    if not isinstance(destroy, list) or not all(isinstance(i, str) for i in destroy):
        raise invalid_arguments("destroy must be an array of ids")
    count = len(create) + len(update) + len(destroy)
    if count > max_objects:
        raise MethodError("requestTooLarge",
                          f"{count} objects to set, at most {max_objects} per call (maxObjectsInSet)")
    return create, update, destroy
