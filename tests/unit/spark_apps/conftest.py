"""One local Spark session for the unit tests of the jobs' pure transformations (no Cassandra)."""

from __future__ import annotations

import logging

import pytest


@pytest.fixture(scope="session")
def spark():
    logging.getLogger("py4j").setLevel(logging.WARNING)  # quiet shutdown chatter
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[1]").appName("unit")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1").getOrCreate())
    yield session
    session.stop()
