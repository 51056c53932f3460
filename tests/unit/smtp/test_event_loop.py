"""The SMTP and IMAP servers' event loop: uvloop by default, the standard library's on request."""

from __future__ import annotations

import asyncio
import socket

import pytest
import uvloop

from mailserver.runtime.settings import ServeSettings, SettingsError
from mailserver.serving.server_thread import AsyncServerThread


class EchoServer:
    """The smallest AsyncServer: answers one line per connection."""

    def __init__(self) -> None:
        self.port: int | None = None
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        async def greet(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(b"220 " + type(asyncio.get_running_loop()).__module__.encode() + b"\r\n")
            await writer.drain()
            writer.close()

        self._server = await asyncio.start_server(greet, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()


@pytest.mark.parametrize(("choice", "module"), [("uvloop", "uvloop"), ("asyncio", "asyncio.unix_events")])
def test_the_server_runs_on_the_loop_chosen(choice, module):
    thread = AsyncServerThread(EchoServer(), event_loop=choice)
    thread.start()
    try:
        with socket.create_connection(("127.0.0.1", thread.port), timeout=5) as client:
            banner = client.makefile("rb").readline()
    finally:
        thread.stop()
    assert banner == f"220 {module}\r\n".encode()


def test_uvloop_is_the_default():
    thread = AsyncServerThread(EchoServer())
    assert isinstance(thread.loop, uvloop.Loop)
    thread.loop.close()


def test_an_unknown_loop_is_refused():
    with pytest.raises(ValueError, match="uvloop, asyncio"):
        AsyncServerThread(EchoServer(), event_loop="trio")


def test_settings_read_the_loop_from_the_environment():
    assert ServeSettings.from_env({}).event_loop == "uvloop"
    assert ServeSettings.from_env({"MAILSERVER_EVENT_LOOP": "asyncio"}).event_loop == "asyncio"
    with pytest.raises(SettingsError, match="MAILSERVER_EVENT_LOOP"):
        ServeSettings.from_env({"MAILSERVER_EVENT_LOOP": "trio"})
