"""How ``make test`` shares the suite between its pytest-xdist workers.

A test file runs whole on one worker (its module fixtures, seeded data and servers are built
once), except that every file of ``stack_airflow_prefixes`` goes to the same worker: those tests
bring up the stack's own Airflow, of which a machine has one.

This is a scheduler (xdist's ``pytest_xdist_make_scheduler`` hook) rather than ``xdist_group``
marks: xdist 3.8 applies the marks by rewriting ``Item._nodeid``, which pytest 9.2 no longer reads.
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadFileScheduling


class FileScheduling(LoadFileScheduling):
    """Work units are files, and one unit holds every file under the shared-Airflow prefixes."""

    def __init__(self, config: Any, log: Any = None, *, shared_prefixes: tuple[str, ...], shared_unit: str) -> None:
        super().__init__(config, log)
        self.shared_prefixes = shared_prefixes
        self.shared_unit = shared_unit

    def _split_scope(self, nodeid: str) -> str:
        if nodeid.startswith(self.shared_prefixes):
            return self.shared_unit
        return super()._split_scope(nodeid)
