"""James's ``StateChangeEvent``: the new states of a user's JMAP data, pushed to their connections.

Its JSON is James's ``JmapEventSerializer`` DTO, flat with a ``type`` field (not the mailbox
events' ``{"<Type>": {...}}``): ``typeStates`` maps a JMAP type name to its new state. A type name
James does not know is skipped when reading; the previous format (``mailboxState``,
``emailState``, ``vacationResponseState``) is still read, as James reads it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mailserver.model.address import Username
from mailserver.model.events import MailboxEvent

STATE_CHANGE_EVENT_TYPE = "org.apache.james.jmap.change.StateChangeEvent"
# James's ``TypeStateFactory`` set: the names a StateChange may carry.
TYPE_NAMES = ("Email", "Mailbox", "Thread", "Identity", "EmailSubmission", "EmailDelivery", "VacationResponse")
_PREVIOUS_FORMAT = {"mailboxState": "Mailbox", "emailState": "Email", "vacationResponseState": "VacationResponse"}


@dataclass(frozen=True, kw_only=True)
class StateChangeEvent(MailboxEvent):
    type_name: ClassVar[str] = "StateChangeEvent"
    has_session_id: ClassVar[bool] = False
    type_states: Mapping[str, str] = field(default_factory=dict)   # type name -> state

    def to_json(self) -> dict[str, Any]:
        return {"type": STATE_CHANGE_EVENT_TYPE, "eventId": str(self.event_id), "username": str(self.user),
                "typeStates": dict(self.type_states)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StateChangeEvent:
        states = data.get("typeStates")
        if states is None:
            states = {name: data[key] for key, name in _PREVIOUS_FORMAT.items() if data.get(key) is not None}
        if not isinstance(states, Mapping):
            raise ValueError("typeStates must be an object")
        known = {name: str(uuid.UUID(str(state))) for name, state in states.items() if name in TYPE_NAMES}
        return cls(user=Username.of(str(data["username"])), event_id=uuid.UUID(str(data["eventId"])),
                   type_states=known)

    @property
    def is_noop(self) -> bool:
        return not self.type_states


def is_state_change_json(data: Any) -> bool:
    return isinstance(data, Mapping) and data.get("type") == STATE_CHANGE_EVENT_TYPE
