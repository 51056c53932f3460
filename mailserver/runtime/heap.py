"""The garbage collector of a started server process.

Everything a process builds while starting (modules, drivers' metadata, prepared statements,
configuration) lives as long as the process, yet the cyclic collector walks it again on every
full collection; under load those walks took a few percent of the CPU (`bench/imap.py`: 1 to 2 s of
thread CPU in a 130 s run).
Once the roles run, ``settle_heap`` moves what exists to the collector's permanent generation
(``gc.freeze``, as pre-forking servers do) and collects the young generation less often, so a
command's short-lived objects are mostly freed by reference counting before a collection runs.
"""

from __future__ import annotations

import gc

# Allocations between young collections: CPython's default (700) runs one every few requests.
YOUNG_THRESHOLD = 10_000


def settle_heap() -> None:
    """Collect what start-up left, freeze the rest, and make young collections rarer."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
