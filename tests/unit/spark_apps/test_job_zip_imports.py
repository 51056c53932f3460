"""Every job imports from the zip SparkJobOperator ships, with the environment's libraries but without
the repository: a server module a job reaches that the zip lacks fails here, not in a DAG run.

(The settings tree once made ``mailserver.vault.config`` import ``uvloop`` through the event-loop
names, and the vault purge could not start.)
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

from spark_apps.packaging import JOBS_DIR, build_py_files

# Jobs whose DAG ships the whole server package instead (MailQueueSparkJob: build_full_py_files).
WHOLE_SERVER = {"restore_deleted_messages"}
# Server modules imported only when a job runs (inside a function), so importing the jobs does not reach
# them: the configs' from_env on the driver (the settings tree), S3Access.reader's DirectS3 in the executors.
IMPORTED_AT_RUN_TIME = ("mailserver.settings", "mailserver.blob.s3_direct")

IMPORT_EACH = """
import importlib.util, sys
zip_path, site, jobs_dir, at_run_time, *jobs = sys.argv[1:]
sys.path.insert(0, zip_path)
sys.path.append(site)   # the libraries, without the .pth that puts the repository on the path
failed = []
for job in jobs:
    spec = importlib.util.spec_from_file_location(f"job_{job}", f"{jobs_dir}/{job}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        failed.append(f"{job}: {exc!r}")
for name in at_run_time.split(","):
    try:
        assert importlib.import_module(name).__file__.startswith(zip_path), name
    except Exception as exc:
        failed.append(f"{name}: {exc!r}")
import mailserver
assert mailserver.__file__.startswith(zip_path), mailserver.__file__
print("\\n".join(failed))
"""


def test_every_job_and_what_its_tasks_import_come_from_the_shipped_zip_alone(tmp_path: Path) -> None:
    zipped = build_py_files(tmp_path)
    jobs = sorted(p.stem for p in JOBS_DIR.glob("*.py") if p.stem != "__init__" and p.stem not in WHOLE_SERVER)
    done = subprocess.run([sys.executable, "-S", "-c", IMPORT_EACH, str(zipped), sysconfig.get_paths()["purelib"],
                           str(JOBS_DIR), ",".join(IMPORTED_AT_RUN_TIME), *jobs], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "", done.stdout
    assert len(jobs) >= 15
