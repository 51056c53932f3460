"""``Guice application lifecycle``: unhealthy while starting, healthy once every role runs, unhealthy
when a role died or the server stops; the roles' liveness probes on the real components."""

from __future__ import annotations

import threading
import time
import warnings
from types import SimpleNamespace

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.delivery import RemoteDeliveryWorker, StaticResolver
from mailserver.domains.memory import MemoryDomainList
from mailserver.mailets.spooler import MailSpooler
from mailserver.observability.checks import CassandraHealthCheck
from mailserver.observability.health import Status
from mailserver.observability.lifecycle import ApplicationLifecycle, LifecycleHealthCheck, Phase
from mailserver.observability.loop_stalls import LoopStallHealthCheck
from mailserver.queue.memory import MemoryMailQueue
from mailserver.runtime.roles import (
    Role,
    delivery_alive,
    server_alive,
    spooler_alive,
    task_worker_alive,
    webadmin_checks,
)
from mailserver.runtime.serve import Server, start_roles
from mailserver.runtime.settings import ServeSettings
from mailserver.smtp import SmtpConfig, SmtpServer, SmtpServerThread
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.worker import TaskWorker
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.webadmin_support import make_context

NAME = "Guice application lifecycle"   # James's component name; probes select on it


class FakeRole(Role):
    def __init__(self, name: str, on_start=None) -> None:
        self.name = name
        self.on_start = on_start
        self.running = False

    def start(self) -> None:
        if self.on_start is not None:
            self.on_start()
        self.running = True

    def stop(self) -> None:
        self.running = False

    def alive(self) -> bool:
        return self.running


def test_the_component_name_is_james():
    assert LifecycleHealthCheck(ApplicationLifecycle(["smtp"])).name == NAME


def test_unhealthy_while_starting_then_healthy_then_unhealthy_when_a_role_dies():
    lifecycle = ApplicationLifecycle(["tasks", "webadmin", "smtp"])
    check = LifecycleHealthCheck(lifecycle)
    seen_by_webadmin = []
    roles = {"tasks": FakeRole("tasks"), "smtp": FakeRole("smtp"),
             # WebAdmin starts before SMTP: a probe at that moment must see "starting".
             "webadmin": FakeRole("webadmin", on_start=lambda: seen_by_webadmin.append(check.check()))}
    started: list[Role] = []
    start_roles(lifecycle, lambda_builders(roles), started)

    during = seen_by_webadmin[0]
    assert during.status is Status.UNHEALTHY
    assert during.cause == "James server is not started. Waiting for role(s): webadmin, smtp"
    assert [r.name for r in started] == ["tasks", "webadmin", "smtp"]
    assert lifecycle.phase is Phase.STARTED
    assert check.check().status is Status.HEALTHY and check.check().cause is None

    roles["smtp"].running = False
    dead = check.check()
    assert (dead.status, dead.cause) == (Status.UNHEALTHY, "role(s) no longer running: smtp")


def lambda_builders(roles: dict[str, FakeRole]) -> dict:
    return {name: (lambda role=role: role) for name, role in roles.items()}


def test_a_raising_liveness_probe_counts_as_dead():
    lifecycle = ApplicationLifecycle(["spooler"])

    def broken() -> bool:
        raise RuntimeError("no idea")

    lifecycle.role_started("spooler", broken)
    assert LifecycleHealthCheck(lifecycle).check().cause == "role(s) no longer running: spooler"


def test_unhealthy_once_stopping():
    lifecycle = ApplicationLifecycle(["smtp"])
    lifecycle.role_started("smtp", lambda: True)
    lifecycle.stopping()
    result = LifecycleHealthCheck(lifecycle).check()
    assert (result.status, result.cause) == (Status.UNHEALTHY, "the server is stopping")


def test_a_role_that_was_not_configured_is_refused():
    with pytest.raises(ValueError, match="not configured"):
        ApplicationLifecycle(["smtp"]).role_started("spooler", lambda: True)


def test_the_server_expects_exactly_its_configured_roles_in_start_order():
    server = Server(ServeSettings(roles=("smtp", "webadmin", "spooler")), env={})
    assert server.lifecycle.expected == ("webadmin", "spooler", "smtp")
    assert server.lifecycle.phase is Phase.STARTING


def test_webadmin_runs_the_lifecycle_check_first_then_the_backends_then_the_event_loops():
    backend = CassandraHealthCheck(session=None)
    lifecycle = ApplicationLifecycle(["webadmin"])
    checks = webadmin_checks(SimpleNamespace(health_checks=[backend]), lifecycle)   # type: ignore[arg-type]
    assert [type(c) for c in checks] == [LifecycleHealthCheck, CassandraHealthCheck, LoopStallHealthCheck]
    assert checks[0].lifecycle is lifecycle


def test_served_under_its_escaped_name():
    lifecycle = ApplicationLifecycle(["webadmin", "smtp"])
    client = TestClient(create_app(make_context(health_checks=[LifecycleHealthCheck(lifecycle)])))
    starting = client.get("/healthcheck/checks/Guice%20application%20lifecycle")
    assert starting.status_code == 503
    assert starting.json()["escapedComponentName"] == "Guice%20application%20lifecycle"
    lifecycle.role_started("webadmin", lambda: True)
    lifecycle.role_started("smtp", lambda: True)
    started = client.get("/healthcheck/checks/Guice%20application%20lifecycle")
    assert (started.status_code, started.json()["status"]) == (200, "healthy")


# -- liveness of the components the roles run ------------------------------------------------
class ThreadKilled(BaseException):
    """What no worker loop catches (they catch Exception): the thread ends, as on a fatal error."""


# The killed threads' tracebacks are expected.
killing = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


class DyingQueue(MemoryMailQueue):
    """``dequeue`` ends the consuming thread (an error no handler catches) once ``die`` is set."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.die = threading.Event()

    def dequeue(self, timeout=None, *, keep_consuming=False):
        if self.die.is_set():
            raise ThreadKilled("thread killed")
        return super().dequeue(timeout=0.01)


def wait_until(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


@killing
def test_spooler_liveness():
    queue = DyingQueue("spool")
    spooler = MailSpooler(None, queue, None, threads=2, poll_timeout=0.01)   # type: ignore[arg-type]
    spooler.start()
    try:
        assert spooler_alive(spooler)
        queue.die.set()
        assert wait_until(lambda: not spooler_alive(spooler))
    finally:
        spooler.stop(timeout=2)


def test_a_spooler_without_threads_is_alive():
    assert spooler_alive(MailSpooler(None, MemoryMailQueue("spool"), None, threads=0))   # type: ignore[arg-type]


@killing
def test_remote_delivery_liveness():
    outgoing = DyingQueue("outgoing")
    worker = RemoteDeliveryWorker(outgoing, MemoryMailQueue("spool"), StaticResolver({}))
    worker.start(2)
    try:
        assert delivery_alive(worker)
        outgoing.die.set()
        assert wait_until(lambda: not delivery_alive(worker))
    finally:
        worker.stop(timeout=2)


def test_task_worker_liveness():
    worker = TaskWorker(MemoryTaskStore(), TaskRegistry(), "node", poll_interval=0.01)
    assert not task_worker_alive(worker)
    worker.start()
    try:
        assert task_worker_alive(worker)
    finally:
        worker.stop()
    assert not task_worker_alive(worker)


def test_smtp_liveness():
    thread = SmtpServerThread(SmtpServer(SmtpConfig(port=0, hostname="mx.test"), MemoryMailQueue("spool"),
                                         MemoryDomainList()))
    assert not server_alive(thread)
    thread.start()
    try:
        assert server_alive(thread)
    finally:
        thread.stop()
    assert wait_until(lambda: not server_alive(thread))
