"""``pip install .`` without the lock gives a server that starts: its declared dependencies suffice.

A clean virtual environment (uv, as ``make bootstrap`` uses, so the wheels come from its cache),
the package installed from the source tree with only ``[project].dependencies`` (the lock as
constraints, so versions match the tested ones, but nothing installed that is not declared), then,
from outside the tree: ``mailserver --help`` and an import of every module of the package.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[2]
UV = REPO / ".venv" / "bin" / "uv"
IMPORT_ALL = """
import importlib, pkgutil, mailserver
assert "site-packages" in mailserver.__file__, mailserver.__file__
names = [m.name for m in pkgutil.walk_packages(mailserver.__path__, "mailserver.")]
for name in names:
    importlib.import_module(name)
print(len(names))
"""


def run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # Without the suite's PYTHONPATH (the tree itself): only what was installed may be imported.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_the_package_installed_alone_starts_and_every_module_imports(tmp_path: Path) -> None:
    if not UV.exists():
        pytest.fail(f"{UV} is missing: `make bootstrap` installs it", pytrace=False)
    venv = tmp_path / "venv"
    made = run(UV, "venv", "--quiet", "--python", sys.executable, venv, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    installed = run(UV, "pip", "install", "--quiet", "--python", python, "--constraint", REPO / "requirements.txt",
                    REPO, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr[-4000:]

    helped = run(venv / "bin" / "mailserver", "--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr[-4000:]
    assert "serve" in helped.stdout and "schema" in helped.stdout, helped.stdout

    imported = run(python, "-c", IMPORT_ALL, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr[-4000:]
    assert int(imported.stdout.strip()) > 100, imported.stdout
