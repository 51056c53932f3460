"""Settings of the authentication throttle, one ``MAILSERVER_AUTH_THROTTLE_*`` variable each.

Defaults follow Dovecot's auth penalty (a delay doubling from 1 s up to 15 s once a client has
failed a few times) and fail2ban's jails (a client address refused for a while after too many
failures within a window), with the refusals keyed so that an address hammering one account
cannot lock the account's owner out (see ``auth_throttle``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from ipaddress import IPv4Network, IPv6Network

from pydantic import BaseModel, ConfigDict, Field

from mailserver.settings import AuthThrottleSettings


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
        """The defaults, overridden by each ``MAILSERVER_AUTH_THROTTLE_*`` variable set
        (``mailserver.settings.security``); SettingsError naming the variable otherwise."""
        settings = AuthThrottleSettings.from_env(env)
        return cls.model_validate({name: value.total_seconds() if isinstance(value, timedelta) else value
                                   for name, value in settings.model_dump().items()})
