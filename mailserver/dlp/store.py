"""James's ``EventSourcingDLPConfigurationStore``: a sender domain's DLP rules are the fold of the
events of its aggregate ``DLPRule/<domain>`` in the event store.

Events and their JSON are James's DTOs: ``dlp-configuration-store`` (rules added) and
``dlp-configuration-clear`` (rules removed), each with ``configurationItems`` (``id``,
``explanation``, ``expression``, ``targetsContent``, ``targetsSender``, ``targetsRecipients``). A
store replaces the rules: one event removes those no longer wanted, the next adds the new ones
(a rule is its every field: changing one is a removal and an addition); nothing is written when
nothing changes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mailserver.eventsourcing.aggregate import CommandHandler, NewEvent
from mailserver.eventsourcing.api import EventStore, History

ADDED, REMOVED = "dlp-configuration-store", "dlp-configuration-clear"
PREFIX = "DLPRule/"


class DuplicateRuleIds(ValueError):
    pass


@dataclass(frozen=True)
class DlpRule:
    id: str
    expression: str
    explanation: str | None = None
    targets_sender: bool = False
    targets_recipients: bool = False
    targets_content: bool = False

    def __post_init__(self) -> None:
        re.compile(self.expression)   # James compiles it: an invalid expression is refused

    def as_item(self) -> dict[str, Any]:
        return {"id": self.id, "explanation": self.explanation, "expression": self.expression,
                "targetsContent": self.targets_content, "targetsSender": self.targets_sender,
                "targetsRecipients": self.targets_recipients}

    @classmethod
    def of_item(cls, item: dict[str, Any]) -> DlpRule:
        return cls(item["id"], item["expression"], item.get("explanation"), bool(item.get("targetsSender")),
                   bool(item.get("targetsRecipients")), bool(item.get("targetsContent")))


def aggregate_id(domain: str) -> str:
    return PREFIX + domain


def rules_of(history: History) -> list[DlpRule]:
    rules: list[DlpRule] = []
    for event in history.events:
        items = [DlpRule.of_item(item) for item in event.payload.get("configurationItems", ())]
        if event.type == ADDED:
            rules += [rule for rule in items if rule not in rules]
        elif event.type == REMOVED:
            rules = [rule for rule in rules if rule not in items]
    return rules


def _decide(history: History, wanted: Sequence[DlpRule]) -> list[NewEvent]:
    existing = rules_of(history)
    removed = [rule for rule in existing if rule not in wanted]
    added = [rule for rule in dict.fromkeys(wanted) if rule not in existing]
    events = []
    if removed:
        events.append(NewEvent(REMOVED, {"configurationItems": [r.as_item() for r in removed]}))
    if added:
        events.append(NewEvent(ADDED, {"configurationItems": [r.as_item() for r in added]}))
    return events


class DlpConfigurationStore:
    def __init__(self, events: EventStore) -> None:
        self.events = events
        self._handler: CommandHandler[Sequence[DlpRule]] = CommandHandler(events, _decide)

    def list(self, domain: str) -> list[DlpRule]:
        return rules_of(self.events.get_history(aggregate_id(domain)))

    def store(self, domain: str, rules: Sequence[DlpRule]) -> None:
        ids = [rule.id for rule in rules]
        if len(set(ids)) != len(ids):
            raise DuplicateRuleIds(ids)
        self._handler.handle(aggregate_id(domain), list(rules))

    def clear(self, domain: str) -> None:
        self._handler.handle(aggregate_id(domain), [])

    def fetch(self, domain: str, rule_id: str) -> DlpRule | None:
        return next((rule for rule in self.list(domain) if rule.id == rule_id), None)
