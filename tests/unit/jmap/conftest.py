"""The in-memory JMAP world each test starts from (see ``tests/support/jmap_world.py``)."""

from __future__ import annotations

import pytest

from tests.support.jmap_world import World, make_world


@pytest.fixture
def world() -> World:
    return make_world()
