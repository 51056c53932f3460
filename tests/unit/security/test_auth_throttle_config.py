"""The throttle's settings: defaults, one environment variable each, errors that name the variable."""

from __future__ import annotations

from ipaddress import ip_network

import pytest

from mailserver.runtime.settings import ServeSettings, SettingsError
from mailserver.security.throttle_config import AuthThrottleConfig
from mailserver.settings import AuthThrottleSettings


def test_defaults():
    config = AuthThrottleConfig.from_env({})
    assert config == AuthThrottleConfig()
    assert (config.enabled, config.window, config.free_failures, config.delay, config.max_delay,
            config.account_max_delay, config.address_limit, config.account_address_limit,
            config.ipv6_prefix, config.exempt_networks, config.max_tracked) == (
        True, 900.0, 3, 1.0, 15.0, 2.0, 20, 10, 64, (), 100_000)


def test_every_field_has_its_variable():
    assert set(AuthThrottleSettings.model_fields) == set(AuthThrottleConfig.model_fields)


def test_variables_override_the_defaults():
    config = AuthThrottleConfig.from_env({
        "MAILSERVER_AUTH_THROTTLE_ENABLED": "false", "MAILSERVER_AUTH_THROTTLE_WINDOW_SECONDS": "30",
        "MAILSERVER_AUTH_THROTTLE_DELAY_SECONDS": "0.2", "MAILSERVER_AUTH_THROTTLE_ADDRESS_LIMIT": "5",
        "MAILSERVER_AUTH_THROTTLE_EXEMPT_NETWORKS": "10.0.0.0/8, fd00::/8"})
    assert not config.enabled
    assert (config.window, config.delay, config.address_limit) == (30.0, 0.2, 5)
    assert config.exempt_networks == (ip_network("10.0.0.0/8"), ip_network("fd00::/8"))


@pytest.mark.parametrize(("variable", "value"), [
    ("MAILSERVER_AUTH_THROTTLE_WINDOW_SECONDS", "0"),
    ("MAILSERVER_AUTH_THROTTLE_ADDRESS_LIMIT", "many"),
    ("MAILSERVER_AUTH_THROTTLE_ENABLED", "perhaps"),
    ("MAILSERVER_AUTH_THROTTLE_EXEMPT_NETWORKS", "10.0.0.0/33"),
])
def test_a_bad_value_names_its_variable(variable, value):
    with pytest.raises(ValueError, match=variable):
        AuthThrottleConfig.from_env({variable: value})


def test_serve_reads_them_with_its_settings():
    settings = ServeSettings.from_env({"MAILSERVER_AUTH_THROTTLE_ACCOUNT_ADDRESS_LIMIT": "4"})
    assert settings.auth_throttle == AuthThrottleConfig(account_address_limit=4)
    with pytest.raises(SettingsError, match="MAILSERVER_AUTH_THROTTLE_MAX_TRACKED"):
        ServeSettings.from_env({"MAILSERVER_AUTH_THROTTLE_MAX_TRACKED": "0"})
