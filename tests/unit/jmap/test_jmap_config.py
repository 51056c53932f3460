"""JMAP's settings: loopback by default, TLS before Basic passwords cross a network, the limits announced."""

from __future__ import annotations

import pytest

from mailserver.jmap.capabilities import CoreLimits
from mailserver.jmap.config import JmapConfig
from mailserver.runtime.settings import ServeSettings
from mailserver.settings import SettingsError
from tests.support.jmap_world import public_pem, signing_key

NETWORK = "192.0.2.10"   # an address on a network (TEST-NET-1), not loopback


def test_the_defaults_are_loopback_basic_and_the_rfc_minded_limits():
    config = JmapConfig.from_env({})
    assert config == JmapConfig()
    assert (config.host, config.port, config.tls, config.auth.basic, config.auth.jwt_public_key) == (
        "127.0.0.1", 8001, False, True, None)
    assert config.limits == CoreLimits()


def test_limits_key_and_url_prefix_come_from_the_environment(tmp_path):
    pem = tmp_path / "jwt.pub"
    pem.write_text(public_pem(signing_key()))
    config = JmapConfig.from_env({"MAILSERVER_JMAP_MAX_SIZE_REQUEST": "1M", "MAILSERVER_JMAP_MAX_CALLS_IN_REQUEST": "4",
                                  "MAILSERVER_JMAP_MAX_OBJECTS_IN_GET": "50", "MAILSERVER_JMAP_MAX_OBJECTS_IN_SET": "5",
                                  "MAILSERVER_JMAP_MAX_CONCURRENT_REQUESTS": "2",
                                  "MAILSERVER_JMAP_JWT_PUBLIC_KEY": str(pem),
                                  "MAILSERVER_JMAP_URL_PREFIX": "https://mail.example/"})
    assert config.limits == CoreLimits(1024 * 1024, 4, 50, 5, 2)
    assert config.auth.jwt_public_key == pem.read_text()
    assert config.base_url == "https://mail.example"


@pytest.mark.parametrize(("env", "message"), [
    ({"MAILSERVER_JMAP_HOST": NETWORK}, "MAILSERVER_JMAP_BASIC_AUTH_REQUIRE_TLS"),
    ({"MAILSERVER_JMAP_TLS_CERT": "/c.pem"}, "MAILSERVER_JMAP_TLS_CERT and MAILSERVER_JMAP_TLS_KEY"),
    ({"MAILSERVER_JMAP_BASIC_AUTH": "false"}, "MAILSERVER_JMAP_BASIC_AUTH"),
    ({"MAILSERVER_JMAP_MAX_CALLS_IN_REQUEST": "0"}, "MAILSERVER_JMAP_MAX_CALLS_IN_REQUEST"),
])
def test_a_configuration_that_would_leak_passwords_or_lock_everyone_out_stops_the_start(env, message):
    with pytest.raises(SettingsError, match=message):
        JmapConfig.from_env(env)


def test_on_a_network_basic_needs_tls_or_the_operators_word_that_a_proxy_has_it():
    tls = JmapConfig.from_env({"MAILSERVER_JMAP_HOST": NETWORK, "MAILSERVER_JMAP_TLS_CERT": "/c.pem",
                               "MAILSERVER_JMAP_TLS_KEY": "/k.pem"})
    assert tls.tls and tls.host == NETWORK
    proxied = JmapConfig.from_env({"MAILSERVER_JMAP_HOST": NETWORK,
                                   "MAILSERVER_JMAP_BASIC_AUTH_REQUIRE_TLS": "false"})
    assert not proxied.tls and proxied.auth.basic


def test_jmap_is_a_role_to_name_not_a_default_one():
    assert "jmap" not in ServeSettings.from_env({}).roles
    assert ServeSettings.from_env({}, roles="jmap,imap").roles == ("jmap", "imap")
    with pytest.raises(SettingsError, match="jmap"):
        ServeSettings.from_env({}, roles="pop3")
