"""Settings of the authentication throttle, one ``MAILSERVER_AUTH_THROTTLE_*`` variable each.

Defaults follow Dovecot's auth penalty (a delay doubling from 1 s up to 15 s once a client has
failed a few times) and fail2ban's jails (a client address refused for a while after too many
failures within a window), with the refusals keyed so that an address hammering one account
cannot lock the account's owner out (see ``auth_throttle``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from ipaddress import IPv4Network, IPv6Network
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

# field -> environment variable
ENVIRONMENT = {
    "enabled": "MAILSERVER_AUTH_THROTTLE_ENABLED",
    "window": "MAILSERVER_AUTH_THROTTLE_WINDOW_SECONDS",
    "free_failures": "MAILSERVER_AUTH_THROTTLE_FREE_FAILURES",
    "delay": "MAILSERVER_AUTH_THROTTLE_DELAY_SECONDS",
    "max_delay": "MAILSERVER_AUTH_THROTTLE_MAX_DELAY_SECONDS",
    "account_max_delay": "MAILSERVER_AUTH_THROTTLE_ACCOUNT_MAX_DELAY_SECONDS",
    "address_limit": "MAILSERVER_AUTH_THROTTLE_ADDRESS_LIMIT",
    "account_address_limit": "MAILSERVER_AUTH_THROTTLE_ACCOUNT_ADDRESS_LIMIT",
    "ipv6_prefix": "MAILSERVER_AUTH_THROTTLE_IPV6_PREFIX",
    "exempt_networks": "MAILSERVER_AUTH_THROTTLE_EXEMPT_NETWORKS",
    "max_tracked": "MAILSERVER_AUTH_THROTTLE_MAX_TRACKED",
}


class AuthThrottleConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    # Failures older than this are forgotten: a refusal ends at the latest one window after the failure that caused it.
    window: float = Field(default=900.0, gt=0)
    # Failures (from an address, or on an account) answered without delay within the window.
    free_failures: int = Field(default=3, ge=0)
    # The first delay; each further failure doubles it.
    delay: float = Field(default=1.0, ge=0)
    # The longest delay for an address (Dovecot's auth penalty stops at 15 s).
    max_delay: float = Field(default=15.0, ge=0)
    # The longest delay failures on an account impose on attempts from other addresses: the owner
    # logging in while someone elsewhere guesses waits at most this long, and is never refused.
    account_max_delay: float = Field(default=2.0, ge=0)
    # Failures from one address (any accounts) within the window before it is refused.
    address_limit: int = Field(default=20, ge=1)
    # Failures on one account from one address within the window before that pair is refused.
    account_address_limit: int = Field(default=10, ge=1)
    # IPv6 clients are counted per network of this prefix (a host owns a whole /64).
    ipv6_prefix: int = Field(default=64, ge=1, le=128)
    # Addresses never counted nor refused as addresses (a webmail or proxy in front of many users);
    # failures on accounts still delay their attempts.
    exempt_networks: tuple[IPv4Network | IPv6Network, ...] = ()
    # Counters kept (addresses, accounts, pairs); beyond it the least recently used are forgotten.
    max_tracked: int = Field(default=100_000, ge=1)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AuthThrottleConfig:
        """The defaults, overridden by each variable set; ValueError naming the variable otherwise."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for name, variable in ENVIRONMENT.items():
            raw = env.get(variable, "").strip()
            if not raw:
                continue
            values[name] = tuple(n.strip() for n in raw.split(",") if n.strip()) if name == "exempt_networks" else raw
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            error = exc.errors()[0]
            variable = ENVIRONMENT.get(str(error["loc"][0]), str(error["loc"][0]))
            raise ValueError(f"{variable}: {error['msg']} (got {error.get('input')!r})") from None
