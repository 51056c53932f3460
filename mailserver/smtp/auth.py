"""SMTP AUTH PLAIN and LOGIN (RFC 4616, draft-murchison-sasl-login) against the UsersRepository.

aiosmtpd calls its ``authenticator`` synchronously on the event loop; password hashing is slow
on purpose, so these mechanisms replace aiosmtpd's built-in ones and verify in a worker thread.
Whether AUTH is offered at all before STARTTLS is aiosmtpd's ``auth_require_tls`` (538 5.7.11).

Every attempt goes through the process's ``AuthThrottle``: it may be delayed before the password
is checked, or refused with ``454 4.7.0 Too many authentication failures, try again in N seconds``
(RFC 4954's temporary authentication failure) without checking it.
"""

from __future__ import annotations

import asyncio
import binascii
import logging
from base64 import b64decode
from typing import Any

from aiosmtpd.smtp import MISSING, SMTP, AuthResult

from mailserver.model.address import InvalidAddress, Username
from mailserver.security.auth_throttle import AuthThrottle
from mailserver.users.api import UsersRepository

log = logging.getLogger(__name__)

CANNOT_DECODE = "501 5.5.2 Can't decode base64"
CANNOT_SPLIT = "501 5.5.2 Can't split auth value"


class SmtpAuthenticator:
    """Mixed into the intake handler: aiosmtpd picks up ``auth_<MECHANISM>`` methods."""

    users: UsersRepository | None
    # the server sets the process's own; not auth_*: aiosmtpd takes those for SASL mechanisms
    login_throttle: AuthThrottle = AuthThrottle.off()

    async def blocking(self, fn: Any, *args: Any) -> Any:
        return await asyncio.to_thread(fn, *args)

    async def _verify(self, server: SMTP, mechanism: str, login: bytes, password: bytes) -> AuthResult:
        if self.users is None:
            return AuthResult(success=False, handled=False)
        address = getattr(server, "remote_addr", None)
        async with self.login_throttle.attempt("SMTP", login.decode("utf-8", "replace"), address) as attempt:
            if attempt.refused:
                log.info("AUTH %s refused: %s", mechanism, attempt.refusal)
                return AuthResult(success=False, handled=False, message=f"454 4.7.0 {attempt.refusal}")
            try:
                name = login.decode("utf-8")
                secret = password.decode("utf-8")
                username = Username.of(name)
            except (UnicodeDecodeError, InvalidAddress):
                attempt.failed()
                log.info("AUTH %s refused: malformed user name", mechanism)
                return AuthResult(success=False, handled=False)
            ok = await self.blocking(self.users.verify, username, secret)
            (attempt.succeeded if ok else attempt.failed)()
        if not ok:
            log.info("AUTH %s failed for %s", mechanism, username.value)
            return AuthResult(success=False, handled=False)
        log.info("AUTH %s succeeded for %s", mechanism, username.value)
        return AuthResult(success=True, auth_data=username)

    async def auth_PLAIN(self, server: SMTP, args: list[str]) -> AuthResult:
        raw: Any
        if len(args) == 1:
            raw = await server.challenge_auth("")
            if raw is MISSING:
                return AuthResult(success=False, handled=True)
        else:
            try:
                raw = b64decode(args[1].encode(), validate=True)
            except (binascii.Error, ValueError):
                await server.push(CANNOT_DECODE)
                return AuthResult(success=False, handled=True)
        parts = raw.split(b"\x00")
        if len(parts) != 3:
            await server.push(CANNOT_SPLIT)
            return AuthResult(success=False, handled=True)
        authz, login, password = parts
        if authz and authz != login:  # acting as another user is not supported
            return AuthResult(success=False, handled=False)
        return await self._verify(server, "PLAIN", login, password)

    async def auth_LOGIN(self, server: SMTP, args: list[str]) -> AuthResult:
        login: Any
        if len(args) == 1:
            login = await server.challenge_auth(SMTP.AuthLoginUsernameChallenge)
            if login is MISSING:
                return AuthResult(success=False, handled=True)
        else:
            try:
                login = b64decode(args[1].encode(), validate=True)
            except (binascii.Error, ValueError):
                await server.push(CANNOT_DECODE)
                return AuthResult(success=False, handled=True)
        password = await server.challenge_auth(SMTP.AuthLoginPasswordChallenge)
        if password is MISSING:
            return AuthResult(success=False, handled=True)
        return await self._verify(server, "LOGIN", login, password)
