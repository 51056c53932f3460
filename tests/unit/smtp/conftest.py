"""Fixtures shared by the SMTP unit tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from mailserver.queue.memory import MemoryMailQueue
from mailserver.smtp import SmtpServerThread
from tests.unit.smtp.smtp_helpers import make_server

Start = Callable[..., tuple[SmtpServerThread, MemoryMailQueue]]


@pytest.fixture
def server() -> Iterator[Start]:
    started: list[SmtpServerThread] = []

    def start(**config: object) -> tuple[SmtpServerThread, MemoryMailQueue]:
        thread, queue = make_server(**config)
        started.append(thread)
        return thread, queue

    yield start
    for thread in started:
        thread.stop()
