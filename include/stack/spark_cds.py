"""A class-data-sharing archive for spark-submit's JVM: the same jobs, a third less start-up.

Most of a small Spark job is JVM start-up: loading and verifying some 10,000 classes of Spark,
Scala and the Cassandra connector. A dynamic CDS archive (JDK 13+) records them once, and later
JVMs map them instead of parsing them again: a small connector job went from 23.4 s to 15.5 s,
wall and CPU alike (``bench/spark_startup.py``, ``docs/benchmarks.md``). The archive only changes
how classes are loaded, never what a job does; a JVM that finds it stale (another JDK, other jars)
says so once and starts without it (``-Xshare:auto``, the default).

The archive depends on the JDK, pyspark's jars and the connector jars, so its file name is a
digest of them; it is recorded by one warm-up job that touches what the platform's jobs use (the
SQL engine, a shuffle, Python workers, the Cassandra connector).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

# For short jobs (the test suite's): C1 only and the serial collector shorten JVM start-up further.
SHORT_JOB_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

# Run by spark-submit: the session, a shuffle, a Python UDF and a connector read, so that their
# classes are loaded while the archive records.
WARM_UP_JOB = """
import sys
from pyspark.sql import SparkSession, functions as F
host, port = sys.argv[1], sys.argv[2]
spark = (SparkSession.builder.config("spark.ui.enabled", "false")
         .config("spark.sql.extensions", "com.datastax.spark.connector.CassandraSparkExtensions")
         .config("spark.cassandra.connection.host", host).config("spark.cassandra.connection.port", port)
         .getOrCreate())
frame = spark.range(1000).withColumn("k", F.col("id") % 7)
plus_one = F.udf(lambda v: v + 1, "long")
frame.groupBy("k").agg(F.count("*")).collect()
frame.select(plus_one("id")).rdd.mapPartitions(lambda rows: [sum(1 for _ in rows)]).collect()
if host:   # connects and reads the schema (the connector hides system keyspaces: the lookup fails)
    try:
        spark.read.format("org.apache.spark.sql.cassandra").options(keyspace="system", table="local").load()
    except Exception:
        pass
spark.stop()
"""


def archive_path(directory: Path, java_home: str, jars: Sequence[Path]) -> Path:
    """Where the archive of this JDK, this pyspark and these jars lives (a new name when any changes)."""
    import pyspark

    digest = hashlib.sha256()
    for part in (java_home, pyspark.__version__, *(f"{j}:{j.stat().st_size}" for j in jars)):
        digest.update(part.encode() + b"\0")
    return directory / f"spark-{digest.hexdigest()[:16]}.jsa"


def submit_options(archive: Path, base: str) -> str:
    """``SPARK_SUBMIT_OPTS`` that use the archive."""
    return f"{base} -XX:SharedArchiveFile={archive}".strip()


def warm_up_command(job: Path, jars: Sequence[Path], cassandra_host: str, cassandra_port: int) -> list[str]:
    """spark-submit of the warm-up job (``WARM_UP_JOB`` written to ``job``), ``local[2]``, with these jars."""
    command = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[2]",
               "--conf", "spark.ui.enabled=false"]
    if jars:
        command += ["--jars", ",".join(str(j) for j in jars)]
    return [*command, str(job), cassandra_host, str(cassandra_port)]


def ensure_archive(directory: Path, env: Mapping[str, str], jars: Sequence[Path], *, cassandra_host: str = "",
                   cassandra_port: int = 9042, base_options: str = "", timeout: float = 600) -> Path | None:
    """The archive for ``env``'s JDK and these jars, recorded now if missing; None when it cannot be.

    Recorded into a temporary file then renamed, so a concurrent JVM never maps half an archive.
    """
    archive = archive_path(directory, env["JAVA_HOME"], jars)
    if archive.exists():
        return archive
    directory.mkdir(parents=True, exist_ok=True)
    venv_bin = str(Path(sys.executable).parent)
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        job = Path(tmp) / "warm_up.py"
        job.write_text(WARM_UP_JOB)
        recording = Path(tmp) / archive.name
        run_env = {**env, "SPARK_SUBMIT_OPTS": f"{base_options} -XX:ArchiveClassesAtExit={recording}".strip(),
                   # spark-submit finds pyspark (its SPARK_HOME) with the first python3 on PATH.
                   "PATH": os.pathsep.join([venv_bin, env.get("PATH", "")])}
        command = warm_up_command(job, jars, cassandra_host, cassandra_port)
        result = subprocess.run(command, env=run_env, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0 or not recording.exists():
            print(f"[spark-cds] no archive (exit {result.returncode}): {result.stderr[-2000:]}", file=sys.stderr)
            return None
        os.replace(recording, archive)
    return archive
