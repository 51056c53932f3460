"""WebAdmin authentication through the authentication throttle: wrong credentials from one address
are delayed, then refused with 429 and Retry-After; other addresses and credential-less requests are not."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.security.throttle_config import AuthThrottleConfig
from mailserver.webadmin.app import create_app
from mailserver.webadmin.auth import AuthConfig
from tests.support.auth_throttle import RecordingThrottle
from tests.unit.webadmin.webadmin_support import FULL, make_context

ATTACKER, ADMIN = "127.0.0.2", "127.0.0.1"
WINDOW = 120.0
LIMIT = 4


@dataclass
class World:
    app: object
    throttle: RecordingThrottle

    def get(self, source: str, **headers: str):
        client = TestClient(self.app, headers=headers, raise_server_exceptions=False, client=(source, 40000))
        return client.get("/domains")


def make_world(auth: AuthConfig | None = None) -> World:
    throttle = RecordingThrottle(AuthThrottleConfig(window=WINDOW, free_failures=1, delay=0.5, max_delay=4.0,
                                                    address_limit=LIMIT))
    app = create_app(make_context(auth, metrics=throttle.metrics, auth_throttle=throttle.auth_throttle))
    return World(app, throttle)


@pytest.fixture
def world() -> World:
    return make_world()


def test_wrong_passwords_are_delayed_then_refused_with_429_and_retry_after(world):
    answers = [world.get(ATTACKER, Password=f"guess-{n}") for n in range(LIMIT + 1)]
    assert [a.status_code for a in answers] == [401] * LIMIT + [429]
    assert answers[0].text == "Wrong password."
    assert answers[-1].headers["retry-after"] == str(int(WINDOW))
    assert answers[-1].text == f"Too many authentication failures, try again in {int(WINDOW)} seconds."
    assert world.throttle.delays == [0.5, 1.0, 2.0]
    assert world.get(ATTACKER, Password=FULL).status_code == 429   # refused before the password is looked at
    assert world.throttle.meter("authenticationFailures:WebAdmin") == LIMIT
    assert world.throttle.meter("authenticationRefusals:WebAdmin") == 2


def test_the_admin_from_another_address_is_served_while_the_guesser_is_refused(world):
    for n in range(LIMIT):
        world.get(ATTACKER, Password=f"guess-{n}")
    assert world.get(ADMIN, Password=FULL).status_code == 200
    assert world.get(ATTACKER, Password=FULL).status_code == 429


def test_the_refusal_ends_by_itself(world):
    for n in range(LIMIT):
        world.get(ATTACKER, Password=f"guess-{n}")
    world.throttle.clock.now += WINDOW - 1
    assert world.get(ATTACKER, Password=FULL).status_code == 429
    world.throttle.clock.now += 2
    assert world.get(ATTACKER, Password=FULL).status_code == 200


def test_requests_without_credentials_are_not_guesses(world):
    answers = [world.get(ATTACKER) for _ in range(LIMIT * 3)]
    assert {a.status_code for a in answers} == {401}
    assert world.throttle.delays == []
    guesses = [world.get(ATTACKER, Password=f"guess-{n}") for n in range(LIMIT + 1)]   # the count starts at 0
    assert [a.status_code for a in guesses] == [401] * LIMIT + [429]


def test_a_token_that_does_not_verify_is_a_guess():
    world = make_world(AuthConfig.jwt("-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----"))
    answers = [world.get(ATTACKER, Authorization=f"Bearer forged.{n}.token") for n in range(LIMIT + 1)]
    assert [a.status_code for a in answers] == [401] * LIMIT + [429]
    assert answers[0].text == "Invalid Bearer header."
