"""A scriptable aiosmtpd sink playing the remote MX, on a loopback port in a thread."""

from __future__ import annotations

import asyncio
import ssl
import threading

from aiosmtpd.smtp import SMTP


class SinkHandler:
    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], bytes, bool]] = []   # sender, rcpts, content, over TLS
        self.rcpt_replies: dict[str, str] = {}
        self.data_replies: list[str] = []

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        reply = self.rcpt_replies.get(address)
        if reply:
            return reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if self.data_replies:
            reply = self.data_replies.pop(0)
            if not reply.startswith("250"):
                return reply
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content,
                              session.ssl is not None))
        return "250 2.0.0 OK"


class Sink:
    def __init__(self, tls_context: ssl.SSLContext | None = None) -> None:
        self.handler = SinkHandler()
        self.tls_context = tls_context
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def start():
            return await self.loop.create_server(
                lambda: SMTP(self.handler, hostname="mx.remote.test", tls_context=self.tls_context,
                             loop=self.loop), "127.0.0.1", 0)

        self.server = self.loop.run_until_complete(start())
        self.port = self.server.sockets[0].getsockname()[1]
        self._ready.set()
        self.loop.run_forever()
        self.server.close()
        self.loop.run_until_complete(self.server.wait_closed())
        self.loop.close()

    def __enter__(self) -> Sink:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"
