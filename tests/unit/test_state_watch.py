"""The background watch a browser test uses to say maintenance mode was never on while a run ran."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from itertools import count

from tests.support.events import eventually
from tests.support.state_watch import StateWatch


def test_it_keeps_reading_until_stopped_and_keeps_what_failed() -> None:
    calls = count()

    def read() -> int:
        n = next(calls)
        if n == 1:
            raise TimeoutError("a slow answer")
        return n

    with StateWatch(read, interval=0.01) as watch:
        started = datetime.now(UTC)
        eventually(lambda: len(watch.readings) >= 5, timeout=10)
    stopped = datetime.now(UTC)
    seen = len(watch.readings)
    time.sleep(0.05)   # five reading intervals after the block: a watch still running would read meanwhile

    assert len(watch.readings) == seen, "read again after the block ended"
    assert seen >= 5 and watch.states()[:2] == [0, 2]   # the failed reading is skipped, not fatal
    assert [type(exc) for _, exc in watch.failures] == [TimeoutError]
    assert watch.between(stopped, datetime.now(UTC)) == []
    assert len(watch.between(started, stopped)) >= seen - 1
