"""The smoke job's transformation on a tiny local DataFrame (no Cassandra)."""

from __future__ import annotations

import pytest

from spark_apps.jobs.stack_smoke import totals_per_user
from spark_apps.packaging import build_py_files, job_path

pytestmark = pytest.mark.spark


def test_totals_per_user_counts_and_sums(spark):
    df = spark.createDataFrame([("a", 10), ("a", 5), ("b", 1)], "user string, size long")
    rows = {r.user: (r.message_count, r.total_size) for r in totals_per_user(df).collect()}
    assert rows == {"a": (2, 15), "b": (1, 1)}


def test_job_path_refuses_unknown_or_unsafe_names():
    assert job_path("stack_smoke").name == "stack_smoke.py"
    for bad in ("nope", "../etc/passwd", "__init__x"):
        with pytest.raises(ValueError, match="unknown Spark job"):
            job_path(bad)


def test_py_files_zip_contains_the_common_library(tmp_path):
    import zipfile

    names = zipfile.ZipFile(build_py_files(tmp_path)).namelist()
    assert "spark_apps/common/session.py" in names and "spark_apps/jobs/stack_smoke.py" in names
