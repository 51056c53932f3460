"""What a job gets beyond local[*]: executor sizes from the Spark connection, and a Python for its executors."""

from __future__ import annotations

from mailplatform.operators.spark_cluster import cluster_conf


def test_local_master_gets_only_the_sizes_the_connection_names():
    assert cluster_conf("local[2]", {}) == {}
    assert cluster_conf("local[*]", {"executor_memory": "2g"}) == {"spark.executor.memory": "2g"}


def test_cluster_master_runs_executors_on_the_tasks_interpreter_by_default():
    conf = cluster_conf("spark://10.0.0.5:7077", {"executor_memory": "512m", "executor_cores": 1,
                                                  "total_executor_cores": 2, "num_executors": ""},
                        driver_python="/opt/venv/bin/python")
    assert conf == {"spark.executor.memory": "512m", "spark.executor.cores": "1", "spark.cores.max": "2",
                    "spark.pyspark.driver.python": "/opt/venv/bin/python",
                    "spark.pyspark.python": "/opt/venv/bin/python"}


def test_a_named_interpreter_is_what_the_executors_run():
    conf = cluster_conf("k8s://https://api:6443", {"pyspark_python": "/usr/local/bin/python3"},
                        driver_python="/opt/venv/bin/python")
    assert conf["spark.pyspark.python"] == "/usr/local/bin/python3"
    assert "spark.archives" not in conf


def test_a_packed_environment_is_shipped_and_run_from_its_unpacked_copy():
    conf = cluster_conf("spark://h:7077", {"python_archive": "s3a://envs/mailplatform.tar.gz",
                                           "pyspark_python": "/ignored"}, driver_python="/opt/venv/bin/python")
    assert conf["spark.archives"] == "s3a://envs/mailplatform.tar.gz#environment"
    assert conf["spark.pyspark.python"] == "./environment/bin/python"
    assert conf["spark.pyspark.driver.python"] == "/opt/venv/bin/python"
