"""Ship the ``spark_apps`` package to the driver and executors as a ``--py-files`` zip.

spark-submit puts only the application's own directory on ``sys.path``; the jobs import
``spark_apps.common``, so the package travels with every submission (on a cluster too).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
JOBS_DIR = PACKAGE_DIR / "jobs"
REPO_DIR = PACKAGE_DIR.parent
# Parts of the mail server that jobs reuse rather than copy: the fast view's preview and the quota
# root names must be the server's own, and so must the event bus's names and confirmed publisher
# (pika, tenacity: in the executors' environment like the Cassandra driver). They travel in the same zip.
SHARED_MAILSERVER_FILES = ("mailserver/__init__.py", "mailserver/model", "mailserver/mailbox/__init__.py",
                           "mailserver/mailbox/content.py", "mailserver/events/__init__.py",
                           "mailserver/events/naming.py", "mailserver/events/publisher.py",
                           # the search reindex builds the listener's documents and writes with bulk_index
                           "mailserver/search/__init__.py", "mailserver/search/api.py",
                           "mailserver/search/config.py", "mailserver/search/document.py",
                           "mailserver/search/index.py", "mailserver/search/mapping.py",
                           # the vault purge expires months with the server's bucket names and durations
                           "mailserver/vault/__init__.py", "mailserver/vault/buckets.py",
                           "mailserver/vault/config.py",
                           # the message blobs are read with the server's signed GETs (DirectS3)
                           "mailserver/blob/__init__.py", "mailserver/blob/api.py", "mailserver/blob/memory.py",
                           "mailserver/blob/spool.py", "mailserver/blob/s3_direct.py", "mailserver/randomness.py",
                           # every job's default keyspace is the server's
                           "mailserver/cassandra/__init__.py", "mailserver/cassandra/config.py",
                           # the configs' from_env on the driver (the reindex job's SearchConfig):
                           # pydantic-settings is in the driver's environment, as the Cassandra driver is
                           "mailserver/settings", "mailserver/rabbitmq_queues.py", "mailserver/serving/__init__.py",
                           "mailserver/serving/event_loops.py")


def job_path(job: str) -> Path:
    """The application file of ``job``; raises for a name that is not a job module."""
    path = JOBS_DIR / f"{job}.py"
    if not job.isidentifier() or not path.is_file():
        known = sorted(p.stem for p in JOBS_DIR.glob("*.py") if p.stem != "__init__")
        raise ValueError(f"unknown Spark job {job!r}; known jobs: {known}")
    return path


def build_py_files(dest_dir: Path) -> Path:
    """Zip the package (sources only) into ``dest_dir/spark_apps.zip`` and return its path."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / "spark_apps.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for file in sorted(PACKAGE_DIR.rglob("*.py")):
            zf.write(file, Path("spark_apps") / file.relative_to(PACKAGE_DIR))
        for shared in SHARED_MAILSERVER_FILES:
            path = REPO_DIR / shared
            for file in sorted(path.glob("*.py")) if path.is_dir() else [path]:
                zf.write(file, file.relative_to(REPO_DIR))
    return target
