from __future__ import annotations

import pytest

from mailserver.events.dead_letters import MemoryEventDeadLetters
from tests.contract.event_dead_letters_contract import EventDeadLettersContract


class TestMemoryEventDeadLetters(EventDeadLettersContract):
    @pytest.fixture
    def dead_letters(self):
        return MemoryEventDeadLetters()
