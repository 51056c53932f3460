"""A partition's repairs, one at a time or ``Procedure.concurrency`` in flight (``_repair_partition``, no Spark)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from pyspark.sql import Row

from spark_apps.common import procedure as procedure_module
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.procedure import FAILED, FIXED, Outcome, Procedure, _repair_partition

ENDPOINT = CqlEndpoint("127.0.0.1", 9042, "unused")   # never connected: the fake repairs do not use it


class Recording(Procedure):
    """Repairs that take ``pause`` seconds and record which items ran, in which thread, how many at once."""

    job = "test-procedure"
    slice_columns = ("key",)

    def __init__(self, concurrency: int = 1, pause: float = 0.0, failing: frozenset[int] = frozenset()) -> None:
        self.concurrency = concurrency
        self.pause = pause
        self.failing = failing
        self.lock = threading.Lock()
        self.repaired: list[int] = []
        self.threads: set[str] = set()
        self.running = 0
        self.most_running = 0

    def detect(self, spark, settings):   # pragma: no cover (not called here)
        raise NotImplementedError

    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome:
        with self.lock:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            self.threads.add(threading.current_thread().name)
        try:
            time.sleep(self.pause)
            if item["key"] in self.failing:
                raise RuntimeError(f"boom {item['key']}")
            with self.lock:
                self.repaired.append(item["key"])
            return Outcome(FIXED, item, "fixedItems")
        finally:
            with self.lock:
                self.running -= 1


def rows(count: int) -> list[Row]:
    return [Row(key=n, kind="k", slice=n % 3) for n in range(count)]


def run(procedure: Procedure, count: int, rate: float | None = None) -> list[dict[str, Any]]:
    return list(_repair_partition(procedure, ENDPOINT, rate, rows(count)))


@pytest.mark.parametrize("concurrency", [1, 4, 16])
def test_every_item_is_repaired_once_and_has_one_outcome(concurrency):
    procedure = Recording(concurrency, pause=0.002)
    outcomes = run(procedure, 100)
    assert sorted(procedure.repaired) == list(range(100))
    assert sorted(o["item"]["key"] for o in outcomes) == list(range(100))
    assert all(o == {"status": FIXED, "item": {"key": o["item"]["key"], "kind": "k"}, "counter": "fixedItems",
                     "error": None} for o in outcomes)   # the slice column is not part of the item


def test_a_failing_item_is_a_failed_outcome_the_others_are_repaired():
    procedure = Recording(8, pause=0.002, failing=frozenset({3, 57}))
    outcomes = run(procedure, 80)
    failed = sorted((o for o in outcomes if o["status"] == FAILED), key=lambda o: o["item"]["key"])
    assert [(o["item"], o["error"], o["counter"]) for o in failed] == [
        ({"key": 3, "kind": "k"}, "RuntimeError: boom 3", None),
        ({"key": 57, "kind": "k"}, "RuntimeError: boom 57", None)]
    assert sorted(procedure.repaired) == [n for n in range(80) if n not in (3, 57)]
    assert len(outcomes) == 80


@pytest.mark.parametrize("concurrency", [2, 5])
def test_never_more_than_the_concurrency_in_flight(concurrency):
    procedure = Recording(concurrency, pause=0.03)
    run(procedure, 30)
    assert procedure.most_running == concurrency   # reached, never exceeded
    assert len(procedure.threads) <= concurrency


def test_the_partition_is_read_only_as_far_as_slots_free_up():
    procedure = Recording(4, pause=0.005)
    read = 0

    def counted():
        nonlocal read
        for row in rows(50):
            read += 1
            yield row

    outcomes = _repair_partition(procedure, ENDPOINT, None, counted())
    for got, _ in enumerate(outcomes, start=1):
        assert read <= got - 1 + 4   # the outcomes handed out, plus at most 4 items held
    assert read == 50


def test_concurrency_one_repairs_in_order_in_the_tasks_own_thread():
    procedure = Recording()   # Procedure's default
    assert Procedure.concurrency == 1 and procedure.concurrency == 1
    outcomes = run(procedure, 30)
    assert procedure.repaired == list(range(30))
    assert [o["item"]["key"] for o in outcomes] == list(range(30))
    assert procedure.threads == {threading.current_thread().name} and procedure.most_running == 1


class RecordingLimiter:
    """Stands for RateLimiter: counts the tokens taken, and the repairs started before each."""

    events: list[str]

    def __init__(self, rate: float | None) -> None:
        self.rate = rate

    def acquire(self) -> None:
        self.events.append("token")


@pytest.mark.parametrize("concurrency", [1, 6])
def test_each_repair_starts_after_its_token_whatever_the_concurrency(concurrency, monkeypatch):
    events: list[str] = []
    RecordingLimiter.events = events
    monkeypatch.setattr(procedure_module, "RateLimiter", RecordingLimiter)

    class Logged(Recording):
        def repair(self, endpoint, item):
            with self.lock:
                events.append("start")
            return super().repair(endpoint, item)

    outcomes = run(Logged(concurrency, pause=0.002), 60, rate=1000.0)
    assert len(outcomes) == 60 and events.count("token") == 60 and events.count("start") == 60
    for n in range(len(events)):   # at any point, no more repairs started than tokens taken
        assert events[:n].count("start") <= events[:n].count("token")


def test_the_rate_holds_with_threads():
    procedure = Recording(8)
    started = time.monotonic()
    run(procedure, 30, rate=20.0)   # a burst of 20 tokens, then 10 more at 20/s: at least 0.5 s
    elapsed = time.monotonic() - started
    assert 0.45 <= elapsed < 10
    assert sorted(procedure.repaired) == list(range(30))
