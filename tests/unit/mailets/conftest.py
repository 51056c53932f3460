from __future__ import annotations

import pytest

from tests.unit.mailets.support import Env, memory_env


@pytest.fixture
def env() -> Env:
    return memory_env()
