"""Mailbox events on the wire, both ways, as James's ``MailboxEventSerializer`` does.

One event is ``{"<Type>": {...}}`` (but James's JMAP ``StateChangeEvent``, flat with a ``type``
field, see ``state_change``); a batch is a JSON array of those. Text is compact UTF-8
JSON (what James publishes on RabbitMQ and stores in ``event_dead_letters.event``). Anything
that cannot be decoded raises ``EventDeserializationError``: the bus dead-letters such bodies.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from mailserver.model.events import EVENT_TYPES, MailboxEvent
from mailserver.model.jsonvalues import Fields
from mailserver.model.state_change import StateChangeEvent, is_state_change_json


class EventDeserializationError(ValueError):
    """A body that is not a known mailbox event in James's JSON (malformed, unknown type, bad field)."""


def event_to_json(event: MailboxEvent) -> dict[str, Any]:
    return event.to_json()


def event_from_json(data: Any) -> MailboxEvent:
    """One event from its parsed JSON (``{"<Type>": {...}}``, or a flat ``StateChangeEvent``)."""
    if is_state_change_json(data):
        try:
            return StateChangeEvent.from_json(data)
        except (KeyError, ValueError, TypeError) as exc:
            raise EventDeserializationError(f"cannot decode StateChangeEvent: {exc}") from exc
    if not isinstance(data, dict) or len(data) != 1:
        raise EventDeserializationError("an event is a JSON object with its type as the single key")
    ((type_name, body),) = data.items()
    cls = EVENT_TYPES.get(type_name)
    if cls is None:
        raise EventDeserializationError(f"unknown event type {type_name!r}")
    try:
        return cls.from_body(Fields(body, type_name))
    except (ValueError, TypeError) as exc:  # the model's own validation errors, with the field they name
        raise EventDeserializationError(f"cannot decode {type_name} event: {exc}") from exc


def serialize_event(event: MailboxEvent) -> str:
    return _dumps(event.to_json())


def serialize_events(events: Iterable[MailboxEvent]) -> str:
    """James's batch form: a JSON array of events."""
    return _dumps([event.to_json() for event in events])


def deserialize_event(text: str | bytes) -> MailboxEvent:
    data = _parse(text)
    if isinstance(data, list):
        raise EventDeserializationError("expected one event, got a JSON array (use deserialize_events)")
    return event_from_json(data)


def deserialize_events(text: str | bytes) -> list[MailboxEvent]:
    """One event object or a JSON array of them (James's batch form); any bad element fails the whole body."""
    data = _parse(text)
    if isinstance(data, list):
        return [event_from_json(item) for item in data]
    return [event_from_json(data)]


def _dumps(data: Any) -> str:
    # play-json's compact form: no spaces, non-ASCII characters written as they are.
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def _parse(text: str | bytes) -> Any:
    try:
        if isinstance(text, bytes | bytearray | memoryview):
            text = bytes(text).decode("utf-8")
        if not isinstance(text, str):
            raise EventDeserializationError(f"expected JSON text, got {type(text).__name__}")
        return json.loads(text, parse_constant=_no_constant)
    except UnicodeDecodeError as exc:
        raise EventDeserializationError(f"event body is not UTF-8: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise EventDeserializationError(f"event body is not JSON: {exc}") from exc
    except RecursionError as exc:  # absurdly nested arrays or objects
        raise EventDeserializationError("event body is nested too deeply") from exc


def _no_constant(name: str) -> Any:
    raise EventDeserializationError(f"event body is not JSON: {name} is not a JSON value")
