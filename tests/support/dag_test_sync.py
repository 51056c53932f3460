"""``dag.test()`` that writes the DAG folder to Airflow's database once per process, not on each run.

Airflow 3.3's ``dag.test()`` parses every file of the DAG's bundle and syncs each of its DAGs to the
metadata database on every call, so that the DAGs a run triggers are there (apache/airflow#64884):
about 1.4 s a run on the test machine, and ``tests/e2e/maintenance`` makes some eighty runs. The DAG
files do not change during a test session, so the first run of a bundle syncs it whole (the DAGs
it triggers included) and later runs parse and sync only their own DAG's file.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

_running_dag_file: contextvars.ContextVar[Path | None] = contextvars.ContextVar("running_dag_file", default=None)
_synced_bundles: set[Path] = set()


@contextmanager
def bundles_synced_once() -> Iterator[None]:
    """While the block runs, ``dag.test()`` syncs a bundle whole only the first time in this process."""
    from airflow.dag_processing import dagbag
    from airflow.sdk.definitions.dag import DAG

    whole_bag = dagbag.BundleDagBag
    dag_test = DAG.test

    class OwnFileOnceSynced(whole_bag):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, dag_folder: Any = None, bundle_path: Any = None, **kwargs: Any) -> None:
            bundle = Path(bundle_path).resolve() if bundle_path else None
            own = _running_dag_file.get()
            if bundle in _synced_bundles and own is not None and own.parent == bundle:
                dag_folder = own
            super().__init__(*args, dag_folder=dag_folder, bundle_path=bundle_path, **kwargs)
            if bundle is not None:
                _synced_bundles.add(bundle)

    def dag_test_naming_its_file(self: Any, *args: Any, **kwargs: Any) -> Any:
        token = _running_dag_file.set(Path(self.fileloc).resolve())
        try:
            return dag_test(self, *args, **kwargs)
        finally:
            _running_dag_file.reset(token)

    with mock.patch.object(dagbag, "BundleDagBag", OwnFileOnceSynced), \
            mock.patch.object(DAG, "test", dag_test_naming_its_file):
        yield
