"""One delivery attempt of one mail to one domain over SMTP (aiosmtplib), MX by MX.

Classification (James's MailDelivrer): a 5xx reply is permanent and stops the attempt; a 4xx
reply or a network error moves on to the next MX, and when none is left the failure is
temporary. Recipients are handled one by one (James's ``sendpartial=true``, the sample
configuration): the accepted ones are delivered, a refused one is permanent (5xx) or
temporary (4xx) on its own.

aiosmtplib normalises every bare CR or LF of the content to CRLF and dot-stuffs lines before
sending, so a stored message cannot smuggle an end-of-data to the next hop.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import aiosmtplib

from mailserver.delivery.resolver import MxHost

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Failure:
    message: str
    code: int | None = None
    permanent: bool = False


@dataclass
class AttemptResult:
    delivered: list[str] = field(default_factory=list)
    failed: dict[str, Failure] = field(default_factory=dict)
    host: str | None = None

    @property
    def permanent(self) -> dict[str, Failure]:
        return {r: f for r, f in self.failed.items() if f.permanent}

    @property
    def temporary(self) -> dict[str, Failure]:
        return {r: f for r, f in self.failed.items() if not f.permanent}


def _text(message: str) -> str:
    return " ".join(message.split())


class SmtpDeliverer:
    def __init__(self, *, helo_name: str = "localhost", connection_timeout: float = 60.0, timeout: float = 180.0,
                 start_tls: bool = True) -> None:
        self.helo_name = helo_name
        self.connection_timeout = connection_timeout
        self.timeout = timeout
        self.start_tls = start_tls

    async def deliver(self, hosts: Sequence[MxHost], sender: str | None, recipients: Sequence[str],
                      content: bytes) -> AttemptResult:
        last: Failure = Failure("no MX host to try")
        for mx in hosts:
            host, port = mx.host_port
            try:
                return await self._send(mx, host, port, sender, recipients, content)
            except aiosmtplib.SMTPRecipientsRefused as refused:
                result = AttemptResult(host=mx.name)
                for r in refused.recipients:
                    result.failed[r.recipient] = Failure(f"{mx.name}: {r.code} {_text(r.message)}", r.code,
                                                         permanent=500 <= r.code < 600)
                return result
            except aiosmtplib.SMTPResponseException as exc:
                failure = Failure(f"{mx.name}: {exc.code} {_text(exc.message)}", exc.code,
                                  permanent=500 <= exc.code < 600)
                if failure.permanent:
                    return AttemptResult(failed=dict.fromkeys(recipients, failure), host=mx.name)
                log.info("temporary failure at %s (%s), trying the next MX", mx.name, failure.message)
                last = failure
            except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
                last = Failure(f"{mx.name}: {type(exc).__name__}: {exc}")
                log.info("cannot deliver through %s (%s), trying the next MX", mx.name, last.message)
        return AttemptResult(failed=dict.fromkeys(recipients, last))

    async def _send(self, mx: MxHost, host: str, port: int, sender: str | None, recipients: Sequence[str],
                    content: bytes) -> AttemptResult:
        client = aiosmtplib.SMTP(hostname=host, port=port, local_hostname=self.helo_name,
                                 timeout=self.timeout, start_tls=None if self.start_tls else False,
                                 validate_certs=False)
        await client.connect(timeout=self.connection_timeout)
        try:
            errors, _ = await client.sendmail(sender or "", list(recipients), content)
            result = AttemptResult(host=mx.name)
            for rcpt in recipients:
                response = errors.get(rcpt)
                if response is None:
                    result.delivered.append(rcpt)
                else:
                    result.failed[rcpt] = Failure(f"{mx.name}: {response.code} {_text(response.message)}",
                                                  response.code, permanent=500 <= response.code < 600)
            try:
                await client.quit()
            except (aiosmtplib.SMTPException, OSError):
                pass  # delivered already; a failing QUIT changes nothing
            return result
        finally:
            client.close()
