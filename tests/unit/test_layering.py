"""The packages of ``mailserver`` import only their own layer and the layers below, and no two import
each other (docs/architecture.md, "Layers").

A *package* is a first-level name under ``mailserver``: a subpackage (``mailserver.imap``) or a
root module (``mailserver.randomness``). Every import counts, wherever it stands: at module level,
inside a function, or under ``if TYPE_CHECKING``; a type-only import still ties the two packages.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from itertools import pairwise
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "mailserver"

# Bottom to top; the same table as docs/architecture.md. A package may import its own layer and
# the layers below it, never a layer above.
LAYERS: list[tuple[str, set[str]]] = [
    ("foundation", {"mailserver", "randomness", "read_cache", "group_commit", "amqp_heartbeats",
                    "rabbitmq_management", "rabbitmq_queues", "rabbitmq_migration", "observability", "serving"}),
    ("model", {"model"}),
    ("settings", {"settings"}),
    ("backends", {"blob", "cassandra", "airflow"}),
    ("records", {"eventsourcing", "domains", "users", "rrt", "security", "droplist", "sieve", "vacation",
                 "identities", "dlp"}),
    ("mailbox", {"events", "mailbox", "maintenance"}),
    ("mail services", {"queue", "search", "vault", "repository"}),
    ("protocols and processing", {"smtp", "imap", "jmap", "delivery", "mailets"}),
    ("administration", {"tasks", "webadmin"}),
    ("assembly", {"runtime", "cli"}),
]
LEVEL = {package: level for level, (_, packages) in enumerate(LAYERS) for package in packages}


@dataclass(frozen=True)
class Import:
    source: str     # the file, from the directory that holds the package
    line: int
    importer: str   # the package that imports
    imported: str   # the package it imports
    module: str     # the module named, as written (relative imports resolved)

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.importer} imports {self.module} ({self.imported})"


def module_name(path: Path, package: Path = PACKAGE) -> list[str]:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def package_of(dotted: list[str]) -> str:
    """``mailserver.imap.session`` -> ``imap``; ``mailserver`` itself is the package's face."""
    return dotted[1] if len(dotted) > 1 else "mailserver"


def modules_named(node: ast.Import | ast.ImportFrom, here: list[str], is_init: bool,
                  package: Path) -> Iterator[list[str]]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name.split(".")
        return
    if node.level:
        base = here if is_init else here[:-1]
        base = base[:len(base) - (node.level - 1)]
    else:
        base = []
    target = base + (node.module.split(".") if node.module else [])
    if target == ["mailserver"]:
        # ``from mailserver import randomness``: each name is a package of its own (or the face's).
        for alias in node.names:
            submodule = package / alias.name
            known = submodule.is_dir() or submodule.with_suffix(".py").is_file()
            yield ["mailserver", alias.name] if known else ["mailserver"]
    else:
        yield target


def imports_between_packages(package: Path = PACKAGE) -> list[Import]:
    found = []
    for path in sorted(package.rglob("*.py")):
        here = module_name(path, package)
        importer = package_of(here)
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for dotted in modules_named(node, here, path.name == "__init__.py", package):
                if dotted[0] != "mailserver":
                    continue
                imported = package_of(dotted)
                if imported != importer:
                    source = path.relative_to(package.parent).as_posix()
                    found.append(Import(source, node.lineno, importer, imported, ".".join(dotted)))
    return found


def upward(imports: list[Import]) -> list[Import]:
    return [i for i in imports if LEVEL.get(i.imported, -1) > LEVEL.get(i.importer, len(LAYERS))]


def cycle(imports: list[Import]) -> list[str] | None:
    graph: dict[str, set[str]] = {}
    for i in imports:
        graph.setdefault(i.importer, set()).add(i.imported)
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as error:
        return list(error.args[1])
    return None


def test_every_package_has_a_layer():
    packages = {package_of(module_name(p)) for p in PACKAGE.rglob("*.py")}
    unplaced = sorted(packages - LEVEL.keys())
    assert unplaced == [], f"packages on no layer (add them to LAYERS and docs/architecture.md): {unplaced}"
    assert sorted(LEVEL.keys() - packages) == [], "LAYERS names packages that do not exist"


def test_no_package_imports_a_layer_above_its_own():
    wrong = upward(imports_between_packages())
    assert wrong == [], "imports from a lower layer to a higher one:\n" + "\n".join(
        f"{i}  [{LAYERS[LEVEL[i.importer]][0]} -> {LAYERS[LEVEL[i.imported]][0]}]" for i in wrong)


def test_no_two_packages_import_each_other_even_through_others():
    imports = imports_between_packages()
    loop = cycle(imports)
    assert loop is None, "packages that import each other: " + " -> ".join(loop) + "\n" + "\n".join(
        str(i) for i in imports
        if (i.importer, i.imported) in set(pairwise(loop)))


def test_the_checks_see_an_upward_import_inside_a_function_and_the_cycle_it_closes(tmp_path):
    fake = tmp_path / "mailserver"
    modules = {
        "runtime": "from mailserver.smtp import server\n",
        "smtp": "def start():\n    from ..runtime.server_thread import AsyncServerThread\n",
    }
    for package, body in modules.items():
        (fake / package).mkdir(parents=True)
        (fake / package / "__init__.py").write_text("")
        (fake / package / "server.py").write_text(body)

    imports = imports_between_packages(fake)

    assert [str(i) for i in upward(imports)] == [
        "mailserver/smtp/server.py:2: smtp imports mailserver.runtime.server_thread (runtime)"]
    assert sorted(cycle(imports) or []) == ["runtime", "runtime", "smtp"]
