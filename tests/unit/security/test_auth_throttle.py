"""The authentication throttle on a clock the test moves: delays, refusals, their expiry, and the owner."""

from __future__ import annotations

import asyncio
import logging
from ipaddress import ip_network

import pytest

from mailserver.security.auth_throttle import Attempt
from mailserver.security.failure_log import MemoryFailureLog
from mailserver.security.throttle_config import AuthThrottleConfig
from tests.support.auth_throttle import RecordingThrottle

ATTACKER, OWNER_ADDRESS = "203.0.113.7", "198.51.100.20"
ACCOUNT = "alice@example.test"


class Throttled(RecordingThrottle):
    def __init__(self, **config: object) -> None:
        settings = {"window": 600.0, "free_failures": 2, "delay": 1.0, "max_delay": 8.0, "account_max_delay": 2.0,
                    "address_limit": 12, "account_address_limit": 6, **config}
        super().__init__(AuthThrottleConfig.model_validate(settings))

    def login(self, account: str | None, address: str | None, *, ok: bool = False, protocol: str = "IMAP") -> Attempt:
        async def attempt() -> Attempt:
            async with self.auth_throttle.attempt(protocol, account, address) as a:
                if not a.refused:
                    (a.succeeded if ok else a.failed)()
                return a
        return asyncio.run(attempt())


def test_the_first_failures_are_free_then_the_delay_doubles_up_to_its_cap():
    t = Throttled()
    delays = [t.login(ACCOUNT, ATTACKER).delay for _ in range(6)]
    assert delays == [0.0, 0.0, 1.0, 2.0, 4.0, 8.0]
    assert t.delays == [1.0, 2.0, 4.0, 8.0]   # waited, not only computed
    assert t.login("other@example.test", ATTACKER).delay == 8.0   # the address's count, whatever the account


def test_an_address_hammering_one_account_is_refused_and_the_refusal_expires_with_the_window():
    t = Throttled()
    answers = [t.login(ACCOUNT, ATTACKER) for _ in range(8)]
    assert [a.refused for a in answers] == [False] * 6 + [True] * 2
    assert answers[-1].retry_after == 600
    assert "try again in 600 seconds" in answers[-1].refusal
    assert t.login(ACCOUNT, ATTACKER, ok=True).refused   # the right password changes nothing while refused
    t.clock.now += 599
    assert t.login(ACCOUNT, ATTACKER).refused
    t.clock.now += 2
    assert not t.login(ACCOUNT, ATTACKER, ok=True).refused   # expired by itself


def test_the_owner_logging_in_from_another_address_is_delayed_a_little_and_never_refused():
    t = Throttled()
    while not t.login(ACCOUNT, ATTACKER).refused:
        pass
    for attacker in (f"203.0.113.{n}" for n in range(10, 20)):   # more addresses join in on the account
        t.login(ACCOUNT, attacker)
    owner = t.login(ACCOUNT, OWNER_ADDRESS, ok=True)
    assert not owner.refused
    assert owner.delay == 2.0   # account_max_delay, although the account has many failures
    assert t.login(ACCOUNT, ATTACKER, ok=True).refused   # the attacker still is


def test_an_address_spraying_accounts_is_refused_at_the_address_limit():
    t = Throttled()
    answers = [t.login(f"user{n}@example.test", ATTACKER) for n in range(13)]
    assert [a.refused for a in answers] == [False] * 12 + [True]
    assert t.login("someone@example.test", ATTACKER).refused   # every account, from that address
    assert not t.login("someone@example.test", OWNER_ADDRESS).refused


def test_a_success_clears_the_account_at_that_address_but_not_the_address_count():
    t = Throttled()
    for _ in range(5):
        t.login(ACCOUNT, ATTACKER)
    t.login(ACCOUNT, ATTACKER, ok=True)
    assert not t.login(ACCOUNT, ATTACKER).refused   # its pair count started again
    for n in range(6):   # the address count did not: 6 + 6 failures reach the address limit of 12
        t.login(f"user{n}@example.test", ATTACKER)
    assert t.login("mallory@example.test", ATTACKER, ok=True).refused


def test_attempts_under_way_count_so_parallel_guesses_are_refused_as_sequential_ones():
    t = Throttled()

    async def parallel() -> list[Attempt]:
        gate = asyncio.Event()

        async def guess() -> Attempt:
            async with t.auth_throttle.attempt("IMAP", ACCOUNT, ATTACKER) as attempt:
                await gate.wait()   # still checking the password while the others arrive
                if not attempt.refused:
                    attempt.failed()
                return attempt

        tasks = [asyncio.create_task(guess()) for _ in range(40)]
        await asyncio.sleep(0)
        gate.set()
        return await asyncio.gather(*tasks)

    answers = asyncio.run(parallel())
    assert sum(not a.refused for a in answers) == 6   # account_address_limit, not 40
    assert max(a.delay for a in answers) == 8.0       # those let through were spaced as a sequence would be


def test_an_attempt_ended_without_an_outcome_counts_for_nothing():
    t = Throttled()

    async def backend_down() -> None:
        async with t.auth_throttle.attempt("IMAP", ACCOUNT, ATTACKER):
            raise ConnectionError("users repository unreachable")

    for _ in range(20):
        with pytest.raises(ConnectionError):
            asyncio.run(backend_down())
    assert t.login(ACCOUNT, ATTACKER).delay == 0.0


def test_ipv6_clients_are_counted_per_prefix():
    t = Throttled()
    for n in range(12):
        t.login(f"user{n}@example.test", f"2001:db8:1:2::{n + 1:x}")
    assert t.login(ACCOUNT, "2001:db8:1:2:ffff::1").refused        # same /64
    assert not t.login(ACCOUNT, "2001:db8:1:3::1").refused         # the next /64


def test_an_ipv4_mapped_ipv6_address_is_counted_as_its_ipv4_address():
    t = Throttled()
    for n in range(12):
        t.login(f"user{n}@example.test", ATTACKER)
    assert t.login(ACCOUNT, f"::ffff:{ATTACKER}").refused


def test_an_exempt_network_is_never_refused_as_an_address_but_its_accounts_still_delay():
    t = Throttled(exempt_networks=(ip_network("10.0.0.0/8"),))
    answers = [t.login(f"user{n}@example.test", "10.1.2.3") for n in range(30)]
    assert not any(a.refused for a in answers)
    for _ in range(4):
        t.login(ACCOUNT, "10.1.2.3")
    assert t.login(ACCOUNT, "10.1.2.3").delay == 2.0


def test_a_disabled_throttle_neither_delays_nor_refuses_but_still_counts_failures():
    t = Throttled(enabled=False)
    answers = [t.login(ACCOUNT, ATTACKER) for _ in range(50)]
    assert not any(a.refused or a.delay for a in answers)
    assert t.delays == []
    assert t.meter("authenticationFailures:IMAP") == 50


def test_failures_delays_and_refusals_are_counted_per_protocol():
    t = Throttled()
    for _ in range(4):
        t.login(ACCOUNT, ATTACKER, protocol="SMTP")
    for _ in range(3):
        t.login(ACCOUNT, ATTACKER, protocol="IMAP")
    assert t.meter("authenticationFailures:SMTP") == 4
    assert t.meter("authenticationDelays:SMTP") == 2
    assert t.meter("authenticationFailures:IMAP") == 2
    assert t.meter("authenticationRefusals:IMAP") == 1


def test_a_refusal_is_logged_as_a_warning_naming_account_and_address_once_per_refusal(caplog):
    t = Throttled()
    with caplog.at_level(logging.DEBUG, logger="mailserver.security.auth_throttle"):
        for _ in range(10):
            t.login(ACCOUNT, ATTACKER)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert ACCOUNT in warnings[0].getMessage() and ATTACKER in warnings[0].getMessage()
    assert "refused for 600 s" in warnings[0].getMessage()
    assert t.meter("authenticationRefusals:IMAP") == 4   # each refusal is counted


def test_the_counters_kept_are_bounded_the_least_recently_used_forgotten():
    t = Throttled(max_tracked=30)
    while not t.login(ACCOUNT, ATTACKER).refused:
        pass
    for n in range(30):   # 30 new addresses each add an address, an account and a pair counter
        t.login(ACCOUNT, f"192.0.2.{n}")
    assert len(t.auth_throttle.failures) <= 30    # type: ignore[arg-type]
    assert not t.login(ACCOUNT, ATTACKER).refused


def test_the_memory_log_keeps_the_last_times_of_a_key_and_drops_expired_ones():
    failures = MemoryFailureLog(keep=3, max_keys=10)
    for at in range(1, 6):
        failures.add(["k"], float(at))
    assert failures.recent("k", since=0.0) == [3.0, 4.0, 5.0]
    assert failures.recent("k", since=4.0) == [5.0]
    assert failures.recent("k", since=5.0) == []
    assert len(failures) == 0


def test_an_account_name_crafted_as_a_key_does_not_count_against_the_owner_at_their_address():
    t = Throttled()
    crafted = f"{ACCOUNT} ip:{OWNER_ADDRESS}"   # what the owner's account-at-address counter would be named
    for n in range(10):
        t.login(crafted, f"203.0.113.{n}")
    assert not t.login(ACCOUNT, OWNER_ADDRESS, ok=True).refused
