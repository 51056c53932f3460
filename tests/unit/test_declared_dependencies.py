"""``pip install .`` alone gives a server that imports: every distribution the package imports is declared."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_top_level_modules(package: Path) -> set[str]:
    modules: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return {m for m in modules if m not in sys.stdlib_module_names and m != package.name}


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {canonical(re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0]) for spec in project["dependencies"]}


def test_every_distribution_the_server_imports_is_declared():
    owners = packages_distributions()
    modules = imported_top_level_modules(ROOT / "mailserver")
    unknown = sorted(m for m in modules if m not in owners)
    assert unknown == [], f"imported but installed by no distribution: {unknown}"
    missing = sorted({canonical(owners[m][0]) for m in modules} - declared())
    assert missing == [], f"imported by mailserver/ but missing from [project].dependencies: {missing}"
