"""Result references (RFC 8620 3.7): an argument ``#name`` whose value points into an earlier response."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.request import Invocation

WILDCARD = "*"   # JMAP's extension of JSON pointers: every item of an array
NESTED_DEPTH = 8   # how deep in an argument's objects references are looked for (filters nest)


def invalid_reference(description: str) -> MethodError:
    return MethodError("invalidResultReference", description)


def resolve(arguments: dict[str, Any], responses: Sequence[Invocation], depth: int = 0) -> dict[str, Any]:
    """The arguments with every ``#name`` replaced by ``name`` and the value it points to.

    RFC 8620 puts references among a call's arguments; clients also put them in the objects an
    argument holds (jmapc sends ``"filter": {"#inMailbox": ...}``, as Fastmail accepts), so
    objects are searched too, down to ``NESTED_DEPTH`` levels.
    """
    resolved: dict[str, Any] = {}
    for key, value in arguments.items():
        if not key.startswith("#") or (depth and not _is_reference(value)):
            # Inside an object, ``#`` also starts creation ids used as keys (``update``, RFC 8620 5.3;
            # ``onSuccessUpdateEmail``): only a reference-shaped value makes a reference there.
            resolved[key] = resolve(value, responses, depth + 1) \
                if isinstance(value, dict) and depth < NESTED_DEPTH else value
            continue
        name = key[1:]
        if name in arguments:
            raise invalid_arguments(f"both {name!r} and {key!r} are given")
        resolved[name] = _evaluate(value, responses)
    return resolved


def _is_reference(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"resultOf", "name", "path"}


def _evaluate(reference: Any, responses: Sequence[Invocation]) -> Any:
    if not (isinstance(reference, dict) and set(reference) == {"resultOf", "name", "path"}
            and all(isinstance(v, str) for v in reference.values())):
        raise invalid_reference("a result reference is {resultOf, name, path}, all strings")
    response = next((r for r in responses if r.call_id == reference["resultOf"]), None)
    if response is None:
        raise invalid_reference(f"no response to call {reference['resultOf']!r} precedes this call")
    if response.name != reference["name"]:
        raise invalid_reference(f"the response to {reference['resultOf']!r} is {response.name!r}, "
                                f"not {reference['name']!r}")
    try:
        return pointer(response.arguments, reference["path"])
    except LookupError as exc:
        raise invalid_reference(f"path {reference['path']!r}: {exc}") from None


def pointer(document: Any, path: str) -> Any:
    """RFC 6901 with JMAP's ``*``: applied to an array, the rest of the path is evaluated on each
    item, and items that are arrays themselves are flattened into the result."""
    if path == "":
        return document
    if not path.startswith("/"):
        raise LookupError("a JSON pointer starts with /")
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]
    return _walk(document, tokens)


def _walk(value: Any, tokens: list[str]) -> Any:
    if not tokens:
        return value
    token, rest = tokens[0], tokens[1:]
    if isinstance(value, list):
        if token == WILDCARD:
            out: list[Any] = []
            for item in value:
                found = _walk(item, rest)
                out.extend(found if isinstance(found, list) else [found])
            return out
        if not token.isdigit() or (len(token) > 1 and token[0] == "0") or int(token) >= len(value):
            raise LookupError(f"no item {token!r} in an array of {len(value)}")
        return _walk(value[int(token)], rest)
    if isinstance(value, dict):
        if token not in value:
            raise LookupError(f"no member {token!r}")
        return _walk(value[token], rest)
    raise LookupError(f"cannot descend into a {type(value).__name__} with {token!r}")
