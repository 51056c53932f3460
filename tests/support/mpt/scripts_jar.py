"""James's MPT scripts, read from the ``apache-james-mpt-imapmailbox-core`` jar fetched from Maven
Central on first use (the ``mpt`` artifact set of ``include/stack/artifacts``)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from include.stack import artifacts
from include.stack.settings import StackSettings

SCRIPT_DIR = "org/apache/james/imap/scripts/"


class ScriptsJar:
    def __init__(self, jar: Path) -> None:
        self._zip = zipfile.ZipFile(jar)

    def read(self, name: str) -> str:
        return self._zip.read(f"{SCRIPT_DIR}{name}.test").decode("utf-8")

    def close(self) -> None:
        self._zip.close()


def open_scripts(settings: StackSettings | None = None) -> ScriptsJar:
    settings = settings or StackSettings()
    settings.jars_dir.mkdir(parents=True, exist_ok=True)
    lib = artifacts.fetch(settings, "mpt")
    jars = sorted(lib.glob("apache-james-mpt-imapmailbox-core-*.jar"))
    if not jars:
        raise artifacts.FetchError(f"no MPT scripts jar in {lib}")
    return ScriptsJar(jars[0])
