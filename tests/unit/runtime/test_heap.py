"""``settle_heap``: what a started server process does to its garbage collector."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from mailserver.runtime.heap import YOUNG_THRESHOLD, settle_heap


@pytest.fixture
def restored_collector() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_collector")
def test_settle_heap_freezes_what_start_up_built_and_spaces_young_collections() -> None:
    built_at_start_up = [object() for _ in range(10)] + [[] for _ in range(10)]
    older, oldest = gc.get_threshold()[1:]

    settle_heap()

    assert gc.get_freeze_count() >= len(built_at_start_up)
    assert gc.get_threshold() == (YOUNG_THRESHOLD, older, oldest)


@pytest.mark.usefixtures("restored_collector")
def test_garbage_made_after_settling_is_still_collected() -> None:
    settle_heap()

    class Node:
        other: object = None

    a, b = Node(), Node()
    a.other, b.other = b, a   # a cycle: only the collector frees it
    del a, b
    assert gc.collect() >= 2
