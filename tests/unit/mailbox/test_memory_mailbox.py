"""The mailbox contract on the memory adapters, with and without blob deduplication."""

from __future__ import annotations

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.events.in_process import InProcessEventBus, RecordingListener
from mailserver.mailbox.wiring import memory_context
from tests.contract.mailbox_contract import MailboxContract


class TestMemoryMailbox(MailboxContract):
    @pytest.fixture(params=[False, True], ids=["passthrough", "deduplication"])
    def ctx(self, request):
        bus = InProcessEventBus()
        bus.register(RecordingListener())
        return memory_context(MemoryBlobStore(deduplication=request.param), bus)
