"""``MailQueueSize``: each limited queue's cheap size against its limit; limits from the settings."""

from __future__ import annotations

import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.model.address import MailAddress
from mailserver.model.mail import Mail, MailContent
from mailserver.observability.health import Status
from mailserver.queue.api import MailQueueError
from mailserver.queue.memory import MemoryMailQueue, MemoryMailQueueFactory
from mailserver.queue.size_check import MailQueueSizeHealthCheck
from mailserver.runtime.settings import ServeSettings, SettingsError, parse_queue_limits
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.webadmin_support import make_context


class NoBrowseQueue(MemoryMailQueue):
    """The check must use the port's cheap ``size()``; a browse (James's getSize) fails the test."""

    def browse(self):
        raise AssertionError("MailQueueSize browsed the queue")


class NoBrowseFactory(MemoryMailQueueFactory):
    def __init__(self) -> None:
        super().__init__()
        self.queues: dict[str, MemoryMailQueue] = {}

    def get(self, name: str) -> MemoryMailQueue:
        return self.queues.setdefault(name, NoBrowseQueue(name))


def fill(factory, name: str, count: int) -> None:
    for i in range(count):
        factory.get(name).enqueue(Mail(name=f"{name}-{i}", sender=MailAddress.of("a@d.tld"),
                                       recipients=[MailAddress.of("b@d.tld")], content=MailContent.of_bytes(b"x")))


def test_healthy_below_every_limit_degraded_at_a_limit():
    queues = NoBrowseFactory()
    check = MailQueueSizeHealthCheck(queues, {"spool": 3, "outgoing": 10})
    assert check.name == "MailQueueSize"
    fill(queues, "spool", 2)
    assert (check.check().status, check.check().cause) == (Status.HEALTHY, None)
    fill(queues, "spool", 1)   # 3: where SMTP's back-pressure starts answering 452
    result = check.check()
    assert (result.status, result.cause) == (Status.DEGRADED, "spool holds 3 mails (limit 3)")
    fill(queues, "outgoing", 11)
    assert check.check().cause == "spool holds 3 mails (limit 3); outgoing holds 11 mails (limit 10)"


def test_queues_without_a_limit_are_not_watched():
    queues = NoBrowseFactory()
    fill(queues, "other", 5)
    assert MailQueueSizeHealthCheck(queues, {"spool": 1}).check().status is Status.HEALTHY
    assert MailQueueSizeHealthCheck(queues, {}).check().status is Status.HEALTHY


def test_an_unreadable_size_is_unhealthy_naming_the_queue():
    class Broken(NoBrowseQueue):
        def size(self) -> int:
            raise MailQueueError("queue outgoing: size failed: connection reset")

    queues = NoBrowseFactory()
    queues.queues["outgoing"] = Broken("outgoing")
    fill(queues, "spool", 5)
    result = MailQueueSizeHealthCheck(queues, {"spool": 1, "outgoing": 1}).check()
    assert result.status is Status.UNHEALTHY
    assert result.cause == ("cannot read the size of mail queue outgoing: MailQueueError: "
                            "queue outgoing: size failed: connection reset")


def test_negative_limits_are_refused():
    with pytest.raises(ValueError):
        MailQueueSizeHealthCheck(NoBrowseFactory(), {"spool": -1})


def test_served_by_webadmin():
    queues = NoBrowseFactory()
    fill(queues, "spool", 2)
    client = TestClient(create_app(make_context(health_checks=[MailQueueSizeHealthCheck(queues, {"spool": 2})])))
    body = client.get("/healthcheck/checks/MailQueueSize")
    assert body.status_code == 200
    assert body.json() == {"componentName": "MailQueueSize", "escapedComponentName": "MailQueueSize",
                           "status": "degraded", "cause": "spool holds 2 mails (limit 2)"}


# -- limits from the environment ---------------------------------------------------------------
def test_the_spool_limit_is_smtp_back_pressure_limit():
    settings = ServeSettings.from_env({"MAILSERVER_SMTP_SPOOL_LIMIT": "1000",
                                       "MAILSERVER_QUEUE_SIZE_LIMITS": "outgoing=500, bounces=20"})
    assert settings.queue_limits() == {"spool": 1000, "outgoing": 500, "bounces": 20}
    assert ServeSettings.from_env({}).queue_limits() == {}


@pytest.mark.parametrize("spec", ["outgoing", "outgoing=", "=5", "outgoing=many", "outgoing=-1", "spool=5"])
def test_malformed_limits_are_refused(spec):
    with pytest.raises(SettingsError, match="MAILSERVER_QUEUE_SIZE_LIMITS"):
        parse_queue_limits(spec)
