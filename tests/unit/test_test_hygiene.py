"""The suite's own hygiene, read from its source: every test asserts, and no ``pytest.raises`` accepts anything.

A test *asserts* when its body has (functions defined inside it count only where the test calls them,
``asyncio.run(run())``, not where it hands them over, as a monkeypatched stand-in that may never run):

- an ``assert`` statement or ``raise AssertionError(...)``;
- a call to ``pytest.raises``, ``pytest.fail`` or ``pytest.warns``;
- a call to anything named ``assert*``, ``expect``, ``expect_*`` or ``check_*`` (unittest and mock
  assertions, Playwright's ``expect``);
- a call to a function of the suite (in the same module, or imported from ``tests.``) that asserts by
  these same rules, followed through any depth of such helpers.

A test is a function named ``test_*`` anywhere under tests/ (contract classes included) that is not a
fixture.

``pytest.raises(Exception)`` and ``pytest.raises(BaseException)`` (alone or in a tuple) pass for almost
any failure, a typo in the test included: the exception the code under test raises is named instead.

Tests go through public interfaces: no ``obj._name`` read or written (dunders aside; ``self._x``, ``cls._x``
and ``super()._x`` are a test double's own, a subclass calling the hook it overrides). A production class
grows a public seam instead (a read-only property, a constructor parameter); the few private names of the
standard library and third-party code that are the only way to a behaviour are in ``ALLOWED_PRIVATE``,
by file, each with its reason. Module-private helpers imported by name are not attribute reads.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
ASSERTING_PREFIXES = ("assert", "expect_", "check_")
PYTEST_ASSERTIONS = {"raises", "fail", "warns"}
CATCH_ALL = {"Exception", "BaseException"}


def called_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def is_pytest_call(call: ast.Call, names: set[str]) -> bool:
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr in names
            and isinstance(func.value, ast.Name) and func.value.id == "pytest")


Function = ast.FunctionDef | ast.AsyncFunctionDef


def own_nodes(function: Function) -> Iterator[ast.AST]:
    """The nodes of a function's body, without those of functions, lambdas and classes defined in it."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            yield node
            stack.extend(ast.iter_child_nodes(node))


def nested_functions(function: Function) -> dict[str, Function]:
    return {node.name: node for node in ast.walk(function)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not function}


def is_fixture(function: Function) -> bool:
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr == "fixture":
            return True
        if isinstance(target, ast.Name) and target.id == "fixture":
            return True
    return False


@dataclass
class Module:
    path: Path
    tree: ast.Module

    @cached_property
    def functions(self) -> dict[str, Function]:
        """Module-level functions and the methods of module-level classes, by name (methods last)."""
        found: dict[str, Function] = {}
        for node in self.tree.body:
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        found.setdefault(item.name, item)
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found[node.name] = node
        return found

    @cached_property
    def imported(self) -> dict[str, tuple[str, str]]:
        """Local name -> (module, name) of what ``from tests.x import y`` brought in."""
        found = {}
        for node in self.tree.body:
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tests":
                for alias in node.names:
                    found[alias.asname or alias.name] = (node.module, alias.name)
        return found


@dataclass
class Suite:
    modules: dict[str, Module] = field(default_factory=dict)
    _asserts: dict[tuple[str, str], bool] = field(default_factory=dict)

    @classmethod
    def read(cls, root: Path) -> Suite:
        suite = cls()
        for path in sorted(root.rglob("*.py")):
            name = ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
            suite.modules[name] = Module(path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
        return suite

    def helper(self, module: str, name: str) -> tuple[str, Function] | None:
        """Where the function ``name`` seen from ``module`` is defined in the suite, if it is."""
        for _ in range(10):   # re-exports, at most a few hops
            here = self.modules.get(module)
            if here is None:
                return None
            if name in here.functions:
                return module, here.functions[name]
            if name not in here.imported:
                return None
            module, name = here.imported[name]
        return None

    def asserts(self, module: str, function: Function) -> bool:
        key = (module, f"{function.name}:{function.lineno}")
        if key in self._asserts:
            return self._asserts[key]
        self._asserts[key] = False   # a recursive helper does not assert by calling itself
        nested = nested_functions(function)
        self._asserts[key] = any(self.asserts_at(module, node, nested) for node in own_nodes(function))
        return self._asserts[key]

    def asserts_at(self, module: str, node: ast.AST, nested: dict[str, Function]) -> bool:
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            return isinstance(raised, ast.Name) and raised.id == "AssertionError"
        if not isinstance(node, ast.Call):
            return False
        name = called_name(node)
        if is_pytest_call(node, PYTEST_ASSERTIONS) or name == "expect" or name.startswith(ASSERTING_PREFIXES):
            return True
        if isinstance(node.func, ast.Name) and node.func.id in nested:
            return self.asserts(module, nested[node.func.id])
        if isinstance(node.func, ast.Name) or (isinstance(node.func, ast.Attribute)
                                               and isinstance(node.func.value, ast.Name)
                                               and node.func.value.id in ("self", "cls")):
            found = self.helper(module, name)
            return found is not None and self.asserts(*found)
        return False

    def tests(self) -> Iterator[tuple[str, Module, Function]]:
        for name, module in self.modules.items():
            for node in ast.walk(module.tree):
                if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_")
                        and not is_fixture(node)):
                    yield name, module, node


def where(module: Module, node: ast.AST) -> str:
    return f"{module.path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"


@pytest.fixture(scope="module")
def suite() -> Suite:
    return Suite.read(TESTS)


def test_every_test_asserts(suite):
    silent = [f"{where(module, test)} {test.name}" for name, module, test in suite.tests()
              if not suite.asserts(name, test)]
    assert not silent, "tests without any assertion:\n" + "\n".join(silent)


def catch_all_raises(module: Module) -> Iterator[ast.Call]:
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Call) and is_pytest_call(node, {"raises"}) and node.args:
            expected = node.args[0]
            names = expected.elts if isinstance(expected, ast.Tuple) else [expected]
            if any(isinstance(n, ast.Name) and n.id in CATCH_ALL for n in names):
                yield node


def test_no_pytest_raises_accepts_any_exception(suite):
    loose = [f"{where(module, call)} {ast.unparse(call)}" for module in suite.modules.values()
             for call in catch_all_raises(module)]
    assert not loose, "pytest.raises of Exception or BaseException, name the exception raised:\n" + "\n".join(loose)


# (file, private attribute) -> why nothing public reaches that behaviour
ALLOWED_PRIVATE: dict[tuple[str, str], str] = {
    ("tests/unit/smtp/test_smtp_paths.py", "_getaddr"):
        "aiosmtpd parses MAIL/RCPT paths in SMTP._getaddr only; IntakeSMTP overrides it with a fast path, "
        "and the test proves both give the same result",
    ("tests/unit/blob/test_blob_values.py", "_rolled"):
        "tempfile.SpooledTemporaryFile tells whether it moved to disk only by _rolled (fileno() would move it)",
    ("tests/unit/dags/test_mail_queue_dags.py", "_py_files"):
        "Airflow's SparkSubmitHook keeps the --py-files it will submit only in _py_files",
    ("tests/unit/test_randomness.py", "_exit"):
        "os._exit is the documented way out of a forked child without running the parent's cleanup",
    ("tests/support/mailserver_process.py", "_replace"):
        "namedtuple's public API (urllib.parse.SplitResult._replace), underscored against field names",
    **{("tests/support/spark_in_process.py", name):
       "pyspark has no public way to end its driver JVM and py4j gateway (SparkSession.stop() keeps them until "
       "exit): the test session's end takes them from SparkContext's class attributes, under its lock"
       for name in ("_lock", "_active_spark_context", "_gateway", "_jvm")},
}


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def on_own_instance(value: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: a test double's own attributes, or the hook it overrides."""
    if isinstance(value, ast.Name):
        return value.id in ("self", "cls")
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"


def private_accesses(module: Module) -> list[ast.Attribute]:
    found = [node for node in ast.walk(module.tree)
             if isinstance(node, ast.Attribute) and is_private(node.attr) and not on_own_instance(node.value)]
    return sorted(found, key=lambda node: (node.lineno, node.col_offset))


def allowed(module: Module, node: ast.Attribute) -> bool:
    return (module.path.relative_to(ROOT).as_posix(), node.attr) in ALLOWED_PRIVATE


def test_no_test_reaches_into_private_attributes(suite):
    private = sorted(f"{where(module, node)} {ast.unparse(node)}" for module in suite.modules.values()
                     for node in private_accesses(module) if not allowed(module, node))
    assert not private, ("private attributes used by tests: add a public seam to the class, assert through public "
                         "behaviour, or (stdlib / third party only) list it in ALLOWED_PRIVATE:\n" + "\n".join(private))


def test_every_allowed_private_attribute_is_still_used(suite):
    used = {(module.path.relative_to(ROOT).as_posix(), node.attr)
            for module in suite.modules.values() for node in private_accesses(module)}
    assert not set(ALLOWED_PRIVATE) - used, f"stale ALLOWED_PRIVATE entries: {sorted(set(ALLOWED_PRIVATE) - used)}"


# --------------------------------------------------------------------------------- the rules themselves
def silent_tests(source: str, helpers: str = "") -> list[str]:
    suite = Suite()
    suite.modules["tests.helpers"] = Module(Path("tests/helpers.py"), ast.parse(helpers))
    suite.modules["tests.sample"] = Module(Path("tests/sample.py"), ast.parse(source))
    return [test.name for name, _, test in suite.tests() if name == "tests.sample" and not suite.asserts(name, test)]


def test_the_assertion_forms_that_count():
    source = '''
from tests.helpers import verified, quiet
import pytest
def test_assert(): assert 1
def test_raises():
    with pytest.raises(ValueError): int("x")
def test_fail(): pytest.fail("no")
def test_raise_assertion_error(): raise AssertionError("no")
def test_expect(page): expect(page).to_have_title("x")
def test_mock(m): m.assert_called_once_with(1)
def test_check(): check_all()
def test_local_helper(): local()
def test_nested_function_called():
    async def run(): assert True
    asyncio.run(run())
def test_imported_helper(): verified()
def local(): assert True
'''
    helpers = '''
def verified(): inner()
def inner(): assert True
def quiet(): return 1
'''
    assert silent_tests(source, helpers) == []


def test_what_does_not_count():
    source = '''
from tests.helpers import quiet
import pytest
def test_nothing(): pass
def test_a_silent_helper(): quiet()
def test_an_unknown_function(): run()
def test_expected_is_not_expect(): expected_rows()
def test_assertion_only_in_a_nested_function(monkeypatch):
    def refuse(): raise AssertionError("called")
    monkeypatch.setattr("x.y", refuse)
def test_recursive(): test_recursive()
@pytest.fixture
def test_things(): return 1
'''
    assert silent_tests(source, "def quiet(): return 1\n") == [
        "test_nothing", "test_a_silent_helper", "test_an_unknown_function", "test_expected_is_not_expect",
        "test_assertion_only_in_a_nested_function", "test_recursive"]


def test_a_catch_all_raises_is_found_alone_or_in_a_tuple():
    module = Module(Path("tests/sample.py"), ast.parse('''
pytest.raises(Exception, match="x")
pytest.raises((ValueError, BaseException))
pytest.raises(ValueError)
pytest.raises(MyException)
'''))
    assert [call.lineno for call in catch_all_raises(module)] == [2, 3]


def test_private_accesses_that_count():
    module = Module(ROOT / "tests/sample.py", ast.parse('''
store._allocations
thread.server._sessions.add(1)
publisher._open = None
make()._client_config
self._own
cls._registry
super()._load(user)
obj.__class__
obj.public
'''))
    assert [ast.unparse(node) for node in private_accesses(module)] == [
        "store._allocations", "thread.server._sessions", "publisher._open", "make()._client_config"]
