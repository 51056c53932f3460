"""WebAdmin authentication through the process's ``AuthThrottle``.

WebAdmin has no accounts, only credentials (a JWT, a password), so failures count by client
address alone: a wrong password or a token that does not verify is a failure; a request without
credentials, a valid token without ``admin: true`` and a 403 are not (nothing was guessed). A
refused address gets ``429 Too Many Requests`` with ``Retry-After`` before its credentials are
looked at; a delayed one waits on the event loop (``asyncio.sleep``), never blocking it.

The address is the connection's peer, not ``X-Real-IP`` (a client sets that header to whatever
it likes): behind a reverse proxy every client is the proxy, which then belongs in
``MAILSERVER_AUTH_THROTTLE_EXEMPT_NETWORKS`` or its own throttling.
"""

from __future__ import annotations

from collections.abc import Mapping

from mailserver.security.auth_throttle import AuthThrottle
from mailserver.webadmin.auth import Authenticator, AuthMode, Decision

PROTOCOL = "WebAdmin"


async def authorize(authenticator: Authenticator, throttle: AuthThrottle, method: str, headers: Mapping[str, str],
                    address: str | None) -> Decision:
    if authenticator.config.mode is AuthMode.NONE:
        return authenticator.authorize(method, headers)
    async with throttle.attempt(PROTOCOL, None, address) as attempt:
        if attempt.refused:
            return Decision(status=429, body=attempt.refusal + ".", retry_after=attempt.retry_after)
        decision = authenticator.authorize(method, headers)
        if decision.wrong_credentials:
            attempt.failed()
        return decision
