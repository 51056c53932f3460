"""The spooler: ack after processing, retries with mail-processing-error-count, cap, threads, stop."""

from __future__ import annotations

import time

import pytest

from mailserver.mailets.api import Mailet
from mailserver.mailets.registry import MAILETS
from mailserver.mailets.spooler import MailSpooler, spooler_for
from mailserver.model.mail import PROCESSING_ERROR_COUNT, Mail
from mailserver.observability.metrics import Metrics
from mailserver.queue.api import MailQueueError, Outcome
from tests.support.events import eventually
from tests.support.queue_waits import dequeues_entered
from tests.unit.mailets.support import Env, container_of, make_mail

FAILURES = {"left": 0}


class Flaky(Mailet):
    """Raises while FAILURES['left'] > 0, after dropping a recipient (the spooler must restore it)."""

    name = "Flaky"

    def service(self, mail: Mail) -> None:
        if FAILURES["left"] > 0:
            FAILURES["left"] -= 1
            mail.recipients = mail.recipients[:1]
            raise ConnectionError("cassandra timeout")


CHAIN = """\
processors:
  root:
    - mailet: Flaky
      onMailetException: propagate
    - mailet: ToRepository
      params: {repositoryPath: "memory://var/mail/done/"}
  error:
    - mailet: ToRepository
      params: {repositoryPath: "memory://var/mail/error-processor/"}
"""


@pytest.fixture(autouse=True)
def flaky(monkeypatch):
    monkeypatch.setitem(MAILETS, "Flaky", Flaky)
    FAILURES["left"] = 0


def spooler_of(env: Env, **kwargs) -> MailSpooler:
    return MailSpooler(container_of(env, CHAIN), env.spool, env.repositories.select("memory://var/mail/spool-error/"),
                       **kwargs)


def test_success_acknowledges_after_processing(env: Env):
    spooler = spooler_of(env, threads=0)
    env.spool.enqueue(make_mail("alice@example.com"))
    assert spooler.process(env.spool.dequeue(timeout=0)) is Outcome.SUCCESS
    assert env.spool.size() == 0 and len(env.repository("memory://var/mail/done/")) == 1


def test_failures_are_requeued_with_a_count_then_sent_to_error(env: Env):
    FAILURES["left"] = 100
    spooler = spooler_of(env, threads=0, max_retries=2)
    env.spool.enqueue(make_mail("alice@example.com", "bob@example.com"))
    counts = []
    while (item := env.spool.dequeue(timeout=0)) is not None:
        counts.append(item.mail.attributes.get(PROCESSING_ERROR_COUNT, 0))
        assert len(item.mail.recipients) == 2  # restored before requeueing
        spooler.process(item)
    assert counts == [0, 1, 2]
    (errored,) = env.repository("memory://var/mail/error-processor/")
    assert errored.error_message.startswith("Processing failed after 3 attempts: cassandra timeout")
    assert errored.attributes[PROCESSING_ERROR_COUNT] == 3 and len(errored.recipients) == 2
    assert env.repository("memory://var/mail/done/") == []


def test_a_transient_failure_is_retried_and_then_succeeds(env: Env):
    FAILURES["left"] = 1
    spooler = spooler_of(env, threads=0)
    env.spool.enqueue(make_mail("alice@example.com"))
    while (item := env.spool.dequeue(timeout=0)) is not None:
        spooler.process(item)
    (done,) = env.repository("memory://var/mail/done/")
    assert done.attributes[PROCESSING_ERROR_COUNT] == 1


def test_error_processor_failing_too_stores_in_the_spooler_error_repository(env: Env, monkeypatch):
    FAILURES["left"] = 100
    spooler = spooler_of(env, threads=0, max_retries=0)
    monkeypatch.setattr(spooler.container.processors["error"], "service",
                        lambda mail, depth: (_ for _ in ()).throw(OSError("down")))
    env.spool.enqueue(make_mail("alice@example.com"))
    spooler.process(env.spool.dequeue(timeout=0))
    (kept,) = env.repository("memory://var/mail/spool-error/")
    assert "Processing failed after 1 attempts" in kept.error_message


def test_rejected_when_it_can_be_neither_requeued_nor_stored(env: Env, monkeypatch):
    FAILURES["left"] = 100
    spooler = spooler_of(env, threads=0)
    env.spool.enqueue(make_mail("alice@example.com"))
    item = env.spool.dequeue(timeout=0)

    def refuse(mail, delay=None):
        raise MailQueueError("rabbitmq down")

    monkeypatch.setattr(env.spool, "enqueue", refuse)
    assert spooler.process(item) is Outcome.REJECT
    assert len(env.spool.dead_letters) == 1


def test_worker_threads_drain_the_spool_and_stop_gracefully(env: Env):
    spooler = spooler_of(env, threads=2, poll_timeout=0.05)
    for _ in range(10):
        env.spool.enqueue(make_mail("alice@example.com"))
    spooler.start()
    deadline = time.monotonic() + 10
    while spooler.processed < 10 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert spooler.stop(timeout=5)
    assert spooler.processed == 10 and len(env.repository("memory://var/mail/done/")) == 10
    assert env.spool.size() == 0 and spooler.in_flight == 0


def test_stop_does_not_wait_out_an_idle_workers_poll(env: Env, monkeypatch):
    # Workers wait an hour for a mail: stop() ends the wait instead of joining them after it.
    entered = dequeues_entered(monkeypatch, env.spool)
    spooler = spooler_of(env, threads=3, poll_timeout=3600)
    spooler.start()
    eventually(lambda: entered() == 3, timeout=10)   # every worker is waiting in dequeue
    assert spooler.stop(timeout=10)


def test_spooler_configured_from_the_shipped_yaml(env: Env):
    spooler = spooler_for(container_of(env))
    assert spooler.threads == 20 and spooler.max_retries == 5
    assert spooler.error_repository.url == "cassandra://var/mail/error/" and spooler.queue.name == "spool"


def test_spool_processing_timer(env: Env):
    metrics = Metrics()
    spooler = spooler_of(env, threads=0, metrics=metrics)
    env.spool.enqueue(make_mail("alice@example.com"))
    spooler.process(env.spool.dequeue(timeout=0))
    assert b"spoolProcessing_count 1.0" in metrics.exposition()
