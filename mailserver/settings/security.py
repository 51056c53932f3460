"""The authentication throttle of IMAP, SMTP AUTH and WebAdmin (Dovecot's auth penalty, fail2ban's jails)."""

from __future__ import annotations

from datetime import timedelta
from ipaddress import IPv4Network, IPv6Network
from typing import Annotated

from pydantic import BeforeValidator, Field

from .base import EnvironmentSettings, setting
from .values import DecimalSeconds, Flag, NonNegative, Positive, PositiveDecimalSeconds, comma_list, whole

SECONDS = "duration (bare number: seconds, decimals allowed)"


class AuthThrottleSettings(EnvironmentSettings):
    enabled: Flag = setting("MAILSERVER_AUTH_THROTTLE_ENABLED", True, "Throttle authentication failures.",
                            "boolean")
    window: PositiveDecimalSeconds = setting("MAILSERVER_AUTH_THROTTLE_WINDOW_SECONDS", timedelta(seconds=900),
                                             "Failures older than this are forgotten.", SECONDS)
    free_failures: NonNegative = setting("MAILSERVER_AUTH_THROTTLE_FREE_FAILURES", 3, "Failures answered without "
                                         "delay within the window.", "integer")
    delay: DecimalSeconds = setting("MAILSERVER_AUTH_THROTTLE_DELAY_SECONDS", timedelta(seconds=1), "First "
                                    "delay; each further failure doubles it.", SECONDS)
    max_delay: DecimalSeconds = setting("MAILSERVER_AUTH_THROTTLE_MAX_DELAY_SECONDS", timedelta(seconds=15),
                                        "Longest delay for an address.", SECONDS)
    account_max_delay: DecimalSeconds = setting("MAILSERVER_AUTH_THROTTLE_ACCOUNT_MAX_DELAY_SECONDS",
                                                timedelta(seconds=2), "Longest delay failures on an account "
                                                "impose on other addresses.", SECONDS)
    address_limit: Positive = setting("MAILSERVER_AUTH_THROTTLE_ADDRESS_LIMIT", 20, "Failures from one address "
                                      "within the window before it is refused.", "integer")
    account_address_limit: Positive = setting("MAILSERVER_AUTH_THROTTLE_ACCOUNT_ADDRESS_LIMIT", 10, "Failures on "
                                              "one account from one address before that pair is refused.",
                                              "integer")
    ipv6_prefix: Annotated[int, whole(1), Field(le=128)] = setting(
        "MAILSERVER_AUTH_THROTTLE_IPV6_PREFIX", 64, "IPv6 clients are counted per network of this prefix.",
        "integer, 1 to 128")
    exempt_networks: Annotated[tuple[IPv4Network | IPv6Network, ...], BeforeValidator(comma_list)] = setting(
        "MAILSERVER_AUTH_THROTTLE_EXEMPT_NETWORKS", (), "Addresses never counted nor refused (a webmail or "
        "proxy in front of many users).", "comma list of networks")
    max_tracked: Positive = setting("MAILSERVER_AUTH_THROTTLE_MAX_TRACKED", 100_000, "Counters kept; beyond, the "
                                    "least recently used are forgotten.", "integer")
