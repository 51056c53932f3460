"""James's IMAP protocol scripts (MPT) against this server's IMAP role on the memory backends: one
test per (suite, script), one server for the module, every script with users of its own."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.domains.memory import MemoryDomainList
from mailserver.events.in_process import InProcessEventBus
from mailserver.imap import ImapConfig, ImapServer, ImapServerThread
from mailserver.mailbox.wiring import memory_context
from mailserver.model.passwords import PasswordHasher
from mailserver.users.memory import MemoryUsersRepository
from tests.support.mpt import SUMMARY_KEY
from tests.support.mpt import differences as declared
from tests.support.mpt.player import Player
from tests.support.mpt.script import parse, prefixed
from tests.support.mpt.scripts_jar import ScriptsJar, open_scripts
from tests.support.mpt.suites import SUITES, Suite, post_elements, pre_elements

DOMAIN = "mpt.test"
# The scripts' users and passwords (James's ImapTestConstants and suite set-ups).
SCRIPT_USERS = {"imapuser": "password", "imapuser2": "password", "delegate": "123456"}
DIFFERENCES = declared.load()
CASES = [(suite, name) for suite in SUITES for name in suite.scripts]


def _case_id(suite: Suite, name: str) -> str:
    return f"{suite.name}/{name}"


def _declared(table: dict[str, str], suite: Suite, name: str) -> str | None:
    return table.get(_case_id(suite, name)) or table.get(name)


@dataclass
class Conformance:
    port: int
    users: MemoryUsersRepository
    jar: ScriptsJar
    counter: Iterator[int] = field(default_factory=itertools.count)
    outcomes: dict[str, str] = field(default_factory=dict)

    def play(self, suite: Suite, name: str) -> None:
        run = next(self.counter)
        users = {}
        for script_user, password in SCRIPT_USERS.items():
            users[script_user] = f"{script_user}-{run}@{DOMAIN}"
            self.users.add_user(users[script_user], password)
        script = parse(name, self.jar.read(name))
        if suite.prepare_mailbox:
            setup = parse("SelectedStateSetup", self.jar.read("SelectedStateSetup"))
            cleanup = parse("SelectedStateCleanup", self.jar.read("SelectedStateCleanup"))
            script = prefixed(script, setup.elements)
            script.elements.extend(cleanup.elements)
        script = prefixed(script, pre_elements(suite))
        script.elements.extend(post_elements(suite))
        Player("127.0.0.1", self.port, DIFFERENCES, users).play(script)


@pytest.fixture(scope="module")
def conformance(request: pytest.FixtureRequest) -> Iterator[Conformance]:
    # One process writes: its bus brings every change, so the selected mailboxes follow their events
    # (the imap role's path on RabbitMQ), as James's SelectedMailboxImpl.
    ctx = memory_context(MemoryBlobStore(), InProcessEventBus(sees_every_writer=True))
    # James's default algorithm (1,000 rounds): the run logs in some 150 times, and the production
    # cost (about 0.3 s a hash) would be most of the module's time.
    users = MemoryUsersRepository(MemoryDomainList([DOMAIN]), hasher=PasswordHasher("PBKDF2-SHA512"))
    config = ImapConfig(port=0, auth_require_tls=False, idle_poll_interval=0.2)
    thread = ImapServerThread(ImapServer(config, ctx.manager, users, bus=ctx.bus)).start()
    jar = open_scripts()
    started = time.monotonic()
    world = Conformance(thread.port, users, jar)
    try:
        yield world
    finally:
        thread.stop()
        jar.close()
        passed = sum(1 for outcome in world.outcomes.values() if outcome == "pass")
        failing = sum(1 for outcome in world.outcomes.values() if outcome == "known failure")
        declared_count = len(CASES) - len(world.outcomes) if len(world.outcomes) else 0
        summary = (f"MPT: {passed} of {len(CASES)} scripts pass, {declared_count} declared not applicable, "
                   f"{failing} known failures ({time.monotonic() - started:.1f}s)")
        request.config.stash[SUMMARY_KEY] = summary


@pytest.mark.parametrize(("suite", "name"), CASES, ids=[_case_id(s, n) for s, n in CASES])
def test_mpt_script(conformance: Conformance, suite: Suite, name: str) -> None:
    reason = _declared(DIFFERENCES.not_applicable, suite, name)
    if reason:
        pytest.skip(f"declared: {reason}")
    bug = _declared(DIFFERENCES.known_failures, suite, name)
    try:
        conformance.play(suite, name)
    except AssertionError:
        conformance.outcomes[_case_id(suite, name)] = "fail"
        if bug:
            conformance.outcomes[_case_id(suite, name)] = "known failure"
            pytest.xfail(f"known failure: {bug}")
        raise
    conformance.outcomes[_case_id(suite, name)] = "pass"
    if bug:
        pytest.fail(f"listed as a known failure ({bug}) but passes: remove it from differences.yaml",
                    pytrace=False)
