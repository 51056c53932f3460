"""The task-manager contract on the memory store."""

from __future__ import annotations

import pytest

from mailserver.tasks.memory import MemoryTaskStore
from tests.contract.task_manager_contract import TaskManagerContract


class TestMemoryTaskManager(TaskManagerContract):
    @pytest.fixture
    def store(self):
        return MemoryTaskStore()
