"""Processor semantics: splitting, state hand-offs, end of processor, exception routing."""

from __future__ import annotations

import copy
import logging

import pytest

from mailserver.mailets.api import Mailet, Matcher
from mailserver.mailets.container import ProcessingLoopError
from mailserver.mailets.registry import MAILETS, MATCHERS
from mailserver.model.address import MailAddress
from mailserver.model.mail import GHOST, MAILET_ERROR, Mail
from tests.unit.mailets.support import Env, container_of, make_mail

SEEN: list[tuple[str, Mail]] = []


class Record(Mailet):
    """Keeps (processor tag, snapshot) of each mail it sees."""

    name = "Record"
    PARAMS = frozenset({"tag"})

    def service(self, mail: Mail) -> None:
        snapshot = mail.copy_for(mail.recipients, name=mail.name)
        snapshot.attributes = dict(mail.attributes)
        SEEN.append((self.params.get("tag") or "", snapshot))


class Fail(Mailet):
    name = "Fail"

    def service(self, mail: Mail) -> None:
        raise RuntimeError("boom")


class FailMatch(Matcher):
    name = "FailMatch"

    def match(self, mail: Mail) -> list[MailAddress]:
        raise RuntimeError("matcher boom")


@pytest.fixture(autouse=True)
def test_classes(monkeypatch):
    SEEN.clear()
    monkeypatch.setitem(MAILETS, "Record", Record)
    monkeypatch.setitem(MAILETS, "Fail", Fail)
    monkeypatch.setitem(MATCHERS, "FailMatch", FailMatch)


ERROR_PROCESSOR = """\
  error:
    - mailet: Record
      params: {tag: error}
    - mailet: Null
"""


def seen(tag: str) -> list[Mail]:
    return [mail for t, mail in SEEN if t == tag]


def recipients(mail: Mail) -> list[str]:
    return [str(r) for r in mail.recipients]


def test_a_partial_match_splits_the_mail(env: Env):
    container = container_of(env, """\
processors:
  root:
    - match: RecipientIs=alice@example.com
      mailet: SetMailAttribute
      params: {tag: alice}
    - match: HasMailAttribute=tag
      mailet: Record
      params: {tag: tagged}
    - mailet: Record
      params: {tag: all}
    - mailet: Null
""" + ERROR_PROCESSOR)
    mail = make_mail("alice@example.com", "bob@example.com", attributes={"shared": 1})
    container.service(mail)
    (tagged,) = seen("tagged")
    assert recipients(tagged) == ["alice@example.com"]
    assert tagged.name.startswith(mail.name + "!") and len(tagged.name) == len(mail.name) + 5
    assert tagged.attributes == {"shared": 1, "tag": "alice"}
    both = seen("all")
    assert sorted(recipients(m)[0] for m in both) == ["alice@example.com", "bob@example.com"]
    original = next(m for m in both if m.name == mail.name)
    assert recipients(original) == ["bob@example.com"] and "tag" not in original.attributes
    assert mail.state == GHOST


def test_a_split_copy_is_named_the_same_when_the_mail_is_processed_again(env: Env):
    """A spool item seen again after a crash splits the same way: its delivered copy is not stored twice."""
    container = container_of(env, """\
processors:
  root:
    - match: RecipientIs=alice@example.com
      mailet: LocalDelivery
    - mailet: Record
      params: {tag: rest}
    - mailet: Null
""" + ERROR_PROCESSOR)
    mail = make_mail("alice@example.com", "bob@example.com")
    again = copy.deepcopy(mail)   # the same spool item, delivered again (never acknowledged)

    container.service(mail)
    container.service(again)

    assert len(env.inbox("alice@example.com")) == 1
    assert env.context.counters["localDeliveryDuplicates"] == 1
    assert [recipients(m) for m in seen("rest")] == [["bob@example.com"]] * 2


def test_no_match_skips_and_full_match_keeps_the_name(env: Env):
    container = container_of(env, """\
processors:
  root:
    - match: RecipientIs=carol@example.com
      mailet: Record
      params: {tag: carol}
    - match: HostIsLocal
      mailet: Record
      params: {tag: local}
    - mailet: Null
""" + ERROR_PROCESSOR)
    mail = make_mail("alice@example.com", "bob@example.com")
    container.service(mail)
    assert seen("carol") == [] and [m.name for m in seen("local")] == [mail.name]


def test_state_change_hands_over_synchronously_and_the_end_ghosts(env: Env, caplog):
    container = container_of(env, """\
processors:
  root:
    - mailet: ToProcessor
      params: {processor: transport}
    - mailet: Record
      params: {tag: never}
  transport:
    - mailet: Record
      params: {tag: transport}
""" + ERROR_PROCESSOR)
    mail = make_mail("alice@example.com")
    with caplog.at_level(logging.WARNING, logger="tests.mailets"):
        container.service(mail)
    assert [m.state for m in seen("transport")] == ["transport"] and seen("never") == []
    assert mail.state == GHOST
    assert any("reached the end of processor transport" in r.getMessage() and mail.name in r.getMessage()
               for r in caplog.records)
    assert env.spool.size() == 0


def test_a_mail_without_recipients_is_ghosted(env: Env):
    env.rrt.add_error_mapping("closed@example.com", "550 closed")
    container = container_of(env, """\
processors:
  root:
    - mailet: RecipientRewriteTable
    - mailet: Record
      params: {tag: after}
""" + ERROR_PROCESSOR)
    mail = make_mail("closed@example.com")
    container.service(mail)
    assert mail.state == GHOST and seen("after") == []


def test_unknown_state_goes_to_error(env: Env):
    container = container_of(env, "processors:\n  root:\n    - mailet: Null\n" + ERROR_PROCESSOR)
    container.service(make_mail("alice@example.com", state="nowhere"))
    (errored,) = seen("error")
    assert "Unknown processor state 'nowhere'" in errored.error_message


def test_a_processor_cycle_is_detected(env: Env):
    container = container_of(env, """\
processors:
  root:
    - mailet: ToProcessor
      params: {processor: transport}
  transport:
    - mailet: ToProcessor
      params: {processor: root}
""" + ERROR_PROCESSOR)
    with pytest.raises(ProcessingLoopError, match="ToProcessor cycle"):
        container.service(make_mail("alice@example.com"))


# -- exceptions ---------------------------------------------------------------------------------------
def _failing(on: str | None, key: str = "onMailetException", failing: str = "mailet: Fail") -> str:
    option = f"\n      {key}: {on}" if on else ""
    return f"""\
processors:
  root:
    - {failing}{option}
    - mailet: Record
      params: {{tag: next}}
    - mailet: Null
  elsewhere:
    - mailet: Record
      params: {{tag: elsewhere}}
    - mailet: Null
""" + ERROR_PROCESSOR


def test_a_failing_mailet_sends_the_mail_to_error_with_the_reason(env: Env):
    container = container_of(env, _failing(None))
    mail = make_mail("alice@example.com")
    container.service(mail)
    (errored,) = seen("error")
    assert errored.name == mail.name and errored.state == "error"
    assert errored.error_message.startswith("Exception calling Fail: boom")
    assert "RuntimeError: boom" in errored.error_message  # with the trace
    assert isinstance(errored.attributes[MAILET_ERROR], RuntimeError)
    assert seen("next") == []


def test_on_mailet_exception_ignore_propagate_and_processor(env: Env):
    container_of(env, _failing("ignore")).service(make_mail("alice@example.com"))
    assert len(seen("next")) == 1 and seen("error") == []
    with pytest.raises(RuntimeError, match="boom"):
        container_of(env, _failing("propagate")).service(make_mail("alice@example.com"))
    container_of(env, _failing("elsewhere")).service(make_mail("alice@example.com"))
    (moved,) = seen("elsewhere")
    assert "boom" in moved.error_message and seen("error") == []


def test_on_match_exception(env: Env):
    failing = "match: FailMatch\n      mailet: Record\n      params: {tag: matched}"
    container_of(env, _failing(None, "onMatchException", failing)).service(make_mail("alice@example.com"))
    (errored,) = seen("error")
    assert errored.error_message.startswith("Exception calling FailMatch: matcher boom")
    SEEN.clear()
    container_of(env, _failing("nomatch", "onMatchException", failing)).service(make_mail("alice@example.com"))
    assert seen("matched") == [] and len(seen("next")) == 1
    SEEN.clear()
    container_of(env, _failing("matchall", "onMatchException", failing)).service(make_mail("alice@example.com"))
    assert len(seen("matched")) == 1 and len(seen("next")) == 1
    SEEN.clear()
    container_of(env, _failing("elsewhere", "onMatchException", failing)).service(make_mail("alice@example.com"))
    assert len(seen("elsewhere")) == 1 and seen("next") == []
    with pytest.raises(RuntimeError, match="matcher boom"):
        container_of(env, _failing("propagate", "onMatchException", failing)).service(make_mail("a@example.com"))


def test_a_failure_inside_error_carries_on_in_error(env: Env):
    container = container_of(env, """\
processors:
  root:
    - mailet: Fail
  error:
    - mailet: Fail
    - mailet: Record
      params: {tag: error}
""")
    mail = make_mail("alice@example.com")
    container.service(mail)
    (errored,) = seen("error")
    assert errored.error_message.startswith("Exception calling Fail")
    assert mail.state == GHOST  # end of error: ghosted silently
