"""The queue parameter is checked against the queues WebAdmin knows, when it knows any."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from mailplatform.live import mail_queue_exists
from mailplatform.param_checks import ParamError


def lookups(*queues: str) -> SimpleNamespace:
    return SimpleNamespace(mail_queues=lambda: set(queues))


def test_a_queue_webadmin_does_not_list_is_refused_naming_the_parameter_and_the_queues():
    with pytest.raises(ParamError, match=r"no mail queue spoool \(the queues: outgoing, spool\)"):
        mail_queue_exists("queue")({"queue": "spoool"}, lookups("spool", "outgoing"))


def test_a_webadmin_that_knows_no_queue_cannot_refuse_one():
    # A rule returns None when the parameter passes and raises ParamError otherwise.
    assert mail_queue_exists("queue")({"queue": "spool"}, lookups()) is None   # a WebAdmin without the spooler role


def test_a_listed_queue_passes():
    assert mail_queue_exists("queue")({"queue": "spool"}, lookups("spool")) is None
