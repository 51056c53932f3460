"""Fetch the JVM artifacts (Cassandra, OpenSearch, S3Proxy, Spark connector jars) with Maven.

Each artifact set is described by a fetch-only POM in ``artifacts/<name>/pom.xml``; the jars
land in ``.stack/lib/<name>/`` and a stamp file holding the POM's hash marks the set complete,
so a changed POM refetches and an interrupted copy never passes for a finished one.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from .settings import StackSettings

POM_DIR = Path(__file__).resolve().parent / "artifacts"
ARTIFACT_SETS = ("cassandra", "opensearch", "s3proxy", "spark")
# Not in the stack: "mpt", James's IMAP protocol scripts, fetched by the conformance tests on first use.


class FetchError(RuntimeError):
    pass


def _pom(name: str) -> Path:
    return POM_DIR / name / "pom.xml"


def _stamp(settings: StackSettings, name: str) -> Path:
    return settings.jars_dir / f"{name}.stamp"


def _digest(name: str) -> str:
    return hashlib.sha256(_pom(name).read_bytes()).hexdigest()


def lib_dir(settings: StackSettings, name: str) -> Path:
    return settings.jars_dir / name


def is_fetched(settings: StackSettings, name: str) -> bool:
    stamp = _stamp(settings, name)
    return stamp.exists() and stamp.read_text().strip() == _digest(name)


def fetch(settings: StackSettings, name: str, *, log: Callable[[str], None] = print) -> Path:
    """Copy the runtime jars of ``name`` into ``.stack/lib/<name>`` unless already there."""
    target = lib_dir(settings, name)
    if is_fetched(settings, name):
        return target
    if shutil.which("mvn") is None:
        raise FetchError("Maven (mvn) is not installed: run the bootstrap (make bootstrap) first")
    log(f"fetching {name} jars from Maven Central (first use only)...")
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    cmd = [
        "mvn", "-B", "-q", "-f", str(_pom(name)),
        "dependency:copy-dependencies", "-DincludeScope=runtime",
        f"-DoutputDirectory={staging}",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
        raise FetchError(f"maven could not fetch the {name} jars:\n{tail}")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    _stamp(settings, name).write_text(_digest(name) + "\n")
    return target


def fetch_all(settings: StackSettings, *, log: Callable[[str], None] = print) -> None:
    settings.jars_dir.mkdir(parents=True, exist_ok=True)
    for name in ARTIFACT_SETS:
        fetch(settings, name, log=log)


def spark_jars(settings: StackSettings) -> list[Path]:
    """The jars to hand to spark-submit (``--jars``)."""
    return sorted(lib_dir(settings, "spark").glob("*.jar"))
