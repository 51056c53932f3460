"""Start-up of a small Spark job through spark-submit, with and without the class-data-sharing archive.

    .venv/bin/python bench/spark_startup.py [--runs 3]

The job is the archive's own warm-up job (include/stack/spark_cds.py: a session, a shuffle, a Python
UDF, a Cassandra connector lookup) with the connector jars, ``local[2]`` and the suite's JVM options;
most of its time is start-up, as in the suite's jobs. The runs alternate (without, with) so that a
change of load hits both; wall time and CPU (user + system of spark-submit and its children) per run.
Needs the stack's Cassandra (``python -m include.stack up --profile backends``); records the archive
under ``.stack/spark-cds`` when it is missing.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from include.stack import artifacts, spark_cds  # noqa: E402
from include.stack.settings import StackSettings  # noqa: E402

JVM_OPTIONS = spark_cds.SHORT_JOB_JVM_OPTIONS   # the suite's (tests/conftest.py)


def one_run(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"spark-submit failed: {result.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    settings = StackSettings()
    jars = artifacts.spark_jars(settings)
    venv_bin = Path(sys.executable).parent
    env = {**os.environ, "JAVA_HOME": settings.java_home, "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}"}
    archive = spark_cds.ensure_archive(settings.root / "spark-cds", env, jars, cassandra_host=settings.host,
                                       cassandra_port=settings.ports.cassandra, base_options=JVM_OPTIONS)
    if archive is None:
        raise SystemExit("no archive could be recorded (see above)")
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job.py"
        job.write_text(spark_cds.WARM_UP_JOB)
        command = spark_cds.warm_up_command(job, jars, settings.host, settings.ports.cassandra)
        options = {"without archive": JVM_OPTIONS, "with archive": spark_cds.submit_options(archive, JVM_OPTIONS)}
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in options}
        for _ in range(args.runs):
            for name, opts in options.items():
                results[name].append(one_run(command, {**env, "SPARK_SUBMIT_OPTS": opts}))
    print(f"load average at the end: {os.getloadavg()}")
    print("| spark-submit | runs | wall, median (s) | CPU, median (s) |")
    print("|---|---|---|---|")
    for name, runs in results.items():
        print(f"| {name} | {len(runs)} | {statistics.median(w for w, _ in runs):.1f} | "
              f"{statistics.median(c for _, c in runs):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
