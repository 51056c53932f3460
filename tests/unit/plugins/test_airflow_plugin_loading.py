"""Airflow's plugin loader must not execute the mailplatform package file by file.

It imports each ``.py`` of the plugins folder as a top-level module named after the file, so
``hooks/cassandra.py`` would become ``sys.modules["cassandra"]`` and shadow the DataStax driver
in every scheduler, worker and ``dag.test()`` process (seen: ``cannot import name
'ConsistencyLevel' from 'cassandra'``). ``plugins/.airflowignore`` keeps the package out.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PLUGINS = Path(os.environ["AIRFLOW__CORE__PLUGINS_FOLDER"])


def test_the_plugin_loader_finds_no_file_of_the_package():
    from airflow._shared.module_loading import find_path_from_directory

    files = [f for f in find_path_from_directory(str(PLUGINS), ".airflowignore", "glob") if f.endswith(".py")]
    # The registrations only: the run notes' listener and the timetables.
    assert sorted(files) == [str(PLUGINS / "mailplatform_run_notes.py"), str(PLUGINS / "mailplatform_timetables.py")]


def test_loading_airflow_plugins_leaves_the_cassandra_driver_in_place():
    import cassandra
    from airflow._shared.plugins_manager.plugins_manager import _load_plugins_from_plugin_directory

    _load_plugins_from_plugin_directory(plugins_folder=str(PLUGINS), load_examples=False,
                                        ignore_file_syntax="glob")
    assert sys.modules["cassandra"] is cassandra
    assert hasattr(sys.modules["cassandra"], "ConsistencyLevel")
