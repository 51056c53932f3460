"""Email/query's text filters and filter operators (RFC 8621 4.4.1) through the search port, on the
memory index fed by the indexing listener, and the row conditions they combine with."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from mailserver.jmap.app import create_app
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.mailbox import MailboxPath
from mailserver.search.wiring import memory_search
from tests.support.jmap_world import MIXED, USER, USING, World, bearer, mailbox_id


class Jmap:
    def __init__(self, world: World, indexed: bool = True) -> None:
        self.world = world
        search = memory_search(world.mailbox) if indexed else None
        self.client = TestClient(create_app(world.context(search=search)))

    def answer(self, **arguments: Any) -> tuple[str, dict[str, Any]]:
        response = self.client.post("/jmap", headers=bearer(), json={
            "using": USING, "methodCalls": [["Email/query", {"accountId": self.world.account, **arguments}, "c1"]]})
        assert response.status_code == 200, response.text
        name, answer, _ = response.json()["methodResponses"][0]
        return name, answer

    def ids(self, filter_: dict[str, Any], **arguments: Any) -> list[str]:
        name, answer = self.answer(filter=filter_, sort=[{"property": "receivedAt"}], **arguments)
        assert name == "Email/query", answer
        return answer["ids"]

    def error(self, filter_: Any) -> str:
        name, answer = self.answer(filter=filter_)
        assert name == "error", answer
        return str(answer["type"])


def message(subject: str, body: str, *, sender: str = "joe@example.com", extra: str = "") -> bytes:
    return (f"From: {sender}\r\nTo: {USER}\r\nSubject: {subject}\r\n{extra}"
            f"Date: Mon, 02 Nov 2026 09:00:00 +0000\r\n\r\n{body}\r\n").encode()


@pytest.fixture
def jmap(world: World) -> Jmap:
    return Jmap(world)


@pytest.fixture
def mail(jmap, world) -> dict[str, str]:
    """Delivered once the index listens: a report, a lunch note from Carol, the mixed quarterly one."""
    return {"report": world.deliver(message("Monthly report", "the numbers are fine"), day=1),
            "lunch": world.deliver(message("Lunch", "pizza at noon", sender="Carol <carol@example.org>",
                                           extra="X-Priority: 1\r\n"), mailbox="Archive", day=2),
            "quarterly": world.deliver(MIXED, day=3)}


def test_rfc_example_text_filter_with_an_operator(jmap, world, mail):
    # RFC 8621 4.4.1's kind of query: in a mailbox, AND a text condition.
    inbox = mailbox_id(world, "INBOX")
    assert jmap.ids({"operator": "AND", "conditions": [{"inMailbox": inbox}, {"text": "numbers"}]}) == [
        mail["report"]]
    assert jmap.ids({"text": "carol@example.org"}) == [mail["lunch"]]   # an address
    assert jmap.ids({"text": "quarterly"}) == [mail["quarterly"]]  # the subject
    assert jmap.ids({"text": "q.pdf"}) == [mail["quarterly"]]      # an attachment's file name


@pytest.mark.parametrize("filter_, expected", [
    ({"from": "carol@example.org"}, ["lunch"]),
    ({"to": "bob"}, ["quarterly"]),
    ({"cc": "carol"}, ["quarterly"]),
    ({"subject": "monthly report"}, ["report"]),
    ({"body": "pizza"}, ["lunch"]),
    ({"body": "figures"}, ["quarterly"]),
    ({"header": ["X-Priority"]}, ["lunch"]),
    ({"header": ["Subject", "lunch"]}, ["lunch"]),
    ({"hasAttachment": True}, ["quarterly"]),
    ({"operator": "OR", "conditions": [{"body": "pizza"}, {"subject": "report"}]}, ["report", "lunch"]),
    ({"operator": "NOT", "conditions": [{"from": "joe"}]}, ["lunch"]),
    ({"operator": "OR", "conditions": []}, []),
    ({"text": "joe", "hasKeyword": "$seen"}, ["report"]),
    ({"text": "joe", "notKeyword": "$seen"}, ["quarterly"]),
    ({"text": "joe", "after": "2026-11-03T00:00:00Z"}, ["quarterly"]),
    ({"text": "joe", "before": "2026-11-02T00:00:00Z"}, ["report"]),
    ({"operator": "AND", "conditions": [{"text": "joe"}, {"maxSize": 200}]}, ["report"]),
])
def test_conditions_and_operators(jmap, world, mail, filter_, expected):
    inbox = MailboxPath.of(USER, "INBOX")
    uid = next(m.uid for m in world.mailbox.manager.get_messages(inbox) if str(m.message_id) == mail["report"])
    world.mailbox.manager.set_flags(inbox, Flags.of(SystemFlag.SEEN), FlagsUpdateMode.ADD, [uid])
    assert jmap.ids(filter_) == [mail[k] for k in expected]


def test_mailbox_scope_of_a_text_filter(jmap, world, mail):
    archive = mailbox_id(world, "Archive")
    assert jmap.ids({"text": "example", "inMailboxOtherThan": [archive]}) == [mail["report"], mail["quarterly"]]
    assert jmap.ids({"operator": "AND", "conditions": [{"inMailbox": archive}, {"text": "example"}]}) == [
        mail["lunch"]]
    assert jmap.ids({"text": "example", "inMailbox": "unknown"}) == []


def test_operators_over_row_conditions_need_no_index(world):
    jmap = Jmap(world, indexed=False)
    first = world.deliver(message("a", "b"), day=1)
    second = world.deliver(message("c", "d"), mailbox="Archive", day=2)
    inbox = mailbox_id(world, "INBOX")
    assert jmap.ids({"operator": "NOT", "conditions": [{"inMailbox": inbox}]}) == [second]
    assert jmap.ids({"operator": "OR", "conditions": [{"inMailbox": inbox}, {"after": "2026-11-02T00:00:00Z"}]}) == [
        first, second]
    assert jmap.error({"text": "b"}) == "unsupportedFilter"


@pytest.mark.parametrize("filter_, error", [
    ({"allInThreadHaveKeyword": "$seen"}, "unsupportedFilter"),
    ({"colour": "red"}, "unsupportedFilter"),
    ({"operator": "OR", "conditions": [{"inMailbox": "x"}, {"text": "y"}]}, "unsupportedFilter"),
    ({"operator": "XOR", "conditions": []}, "invalidArguments"),
    ({"operator": "AND"}, "invalidArguments"),
    ({"operator": "AND", "conditions": ["text"]}, "invalidArguments"),
    ({"text": " "}, "invalidArguments"),
    ({"header": []}, "invalidArguments"),
    ({"header": ["X", "y", "z"]}, "invalidArguments"),
    ({"hasAttachment": "yes"}, "invalidArguments"),
    ({"minSize": -1}, "invalidArguments"),
    ({"before": "yesterday"}, "invalidArguments"),
    ("text", "invalidArguments"),
])
def test_filter_refusals(jmap, world, filter_, error):
    assert jmap.error(filter_) == error
