"""Connection caps (issue 16): a default total and per-address cap, ``421 4.7.0`` then close."""

from __future__ import annotations

import time

import pytest

from mailserver.runtime.settings import ServeSettings, SettingsError
from mailserver.smtp import SmtpConfig
from mailserver.smtp.limits import ConnectionLimits
from tests.unit.smtp.smtp_helpers import RawClient


def greeting(port: int) -> tuple[RawClient, str]:
    client = RawClient(port)
    return client, client.reply()


def closed_by_server(client: RawClient) -> bool:
    client.sock.settimeout(5)
    return client.sock.recv(1) == b""


def eventually_greeted(port: int) -> str:
    deadline = time.monotonic() + 5
    while True:
        client, reply = greeting(port)
        client.close()
        if reply.startswith("220 ") or time.monotonic() > deadline:
            return reply
        time.sleep(0.05)   # the server has not seen the previous close yet


def test_caps_are_on_by_default():
    config = SmtpConfig()
    assert (config.max_connections, config.max_connections_per_ip) == (500, 20)


def test_one_address_cannot_hold_more_than_its_share(server):
    thread, _ = server(max_connections_per_ip=2)
    first, second = greeting(thread.port), greeting(thread.port)
    assert first[1].startswith("220 ") and second[1].startswith("220 ")
    third, reply = greeting(thread.port)
    assert reply == "421 4.7.0 Too many connections from your address, try again later"
    assert closed_by_server(third)
    third.close()
    assert thread.server.limits.count("127.0.0.1") <= 2
    first[0].close()
    assert eventually_greeted(thread.port).startswith("220 ")   # a slot came back
    second[0].close()


def test_the_total_cap_applies_whatever_the_address(server):
    thread, _ = server(max_connections=1, max_connections_per_ip=None)
    first, reply = greeting(thread.port)
    assert reply.startswith("220 ")
    second, refused = greeting(thread.port)
    assert refused == "421 4.7.0 Too many connections, try again later"
    assert closed_by_server(second)
    second.close()
    first.close()
    assert eventually_greeted(thread.port).startswith("220 ")


def test_counts_per_address():
    limits = ConnectionLimits(total=3, per_ip=1)
    limits.opened("10.0.0.1")
    limits.opened("10.0.0.2")
    assert limits.refusal("10.0.0.2") is None
    limits.opened("10.0.0.1")
    assert limits.refusal("10.0.0.1").startswith("421 4.7.0 Too many connections from your address")
    limits.closed("10.0.0.1")
    assert limits.refusal("10.0.0.1") is None and limits.count() == 2 and limits.count("10.0.0.1") == 1


@pytest.mark.parametrize(("env", "expected"), [
    ({}, (500, 20)),
    ({"MAILSERVER_SMTP_MAX_CONNECTIONS": "1000", "MAILSERVER_SMTP_MAX_CONNECTIONS_PER_IP": "5"}, (1000, 5)),
    ({"MAILSERVER_SMTP_MAX_CONNECTIONS": "0", "MAILSERVER_SMTP_MAX_CONNECTIONS_PER_IP": "0"}, (None, None)),
])
def test_caps_from_the_environment(env, expected):
    smtp = ServeSettings.from_env(env).smtp
    assert (smtp.max_connections, smtp.max_connections_per_ip) == expected


def test_a_negative_cap_is_a_settings_error():
    with pytest.raises(SettingsError, match="MAILSERVER_SMTP_MAX_CONNECTIONS_PER_IP"):
        ServeSettings.from_env({"MAILSERVER_SMTP_MAX_CONNECTIONS_PER_IP": "-1"})
