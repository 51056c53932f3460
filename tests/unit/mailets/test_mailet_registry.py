"""The mailet and matcher names: built-ins from one table, others from any distribution's entry points."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from mailserver.mailets.api import ConfigError, Mailet, Matcher
from mailserver.mailets.matchers import BUILTIN_MATCHERS
from mailserver.mailets.registry import (
    BUILTIN_MAILETS,
    MAILET_GROUP,
    MATCHER_GROUP,
    discover,
    entry_point_value,
)

ROOT = Path(__file__).resolve().parents[3]

THIRD_PARTY_MODULE = '''
from mailserver.mailets.api import Mailet, Matcher


class Stamp(Mailet):
    name = "Stamp"
    PARAMS = frozenset({"value"})

    def service(self, mail):
        mail.set_attribute("stamp", self.params.required("value"))


class IsStamped(Matcher):
    name = "IsStamped"

    def match(self, mail):
        return list(mail.recipients) if "stamp" in mail.attributes else []
'''


def install_distribution(root: Path, module: str, entry_points: str) -> None:
    """A distribution as pip leaves it: its module, and a dist-info with its entry points."""
    (root / f"{module}.py").write_text(THIRD_PARTY_MODULE)
    info = root / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


def test_pyproject_declares_exactly_the_builtin_tables():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    for group, table in ((MAILET_GROUP, BUILTIN_MAILETS), (MATCHER_GROUP, BUILTIN_MATCHERS)):
        assert declared[group] == {name: entry_point_value(cls) for name, cls in table.items()}, group


def test_the_builtins_are_found_when_no_distribution_declares_the_group():
    assert discover("mailserver.tests.no-such-group", BUILTIN_MAILETS, Mailet) == BUILTIN_MAILETS
    assert discover("mailserver.tests.no-such-group", BUILTIN_MATCHERS, Matcher) == BUILTIN_MATCHERS


def test_the_builtins_declared_by_installed_metadata_are_the_same_classes(tmp_path, monkeypatch):
    install_distribution(tmp_path, "mailserver_metadata", f"""\
        [{MAILET_GROUP}]
        Null = mailserver.mailets.mailets:Null
        [{MATCHER_GROUP}]
        All = mailserver.mailets.matchers:All
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert discover(MAILET_GROUP, BUILTIN_MAILETS, Mailet) == BUILTIN_MAILETS
    assert discover(MATCHER_GROUP, BUILTIN_MATCHERS, Matcher) == BUILTIN_MATCHERS


def test_a_third_party_mailet_and_matcher_are_found_through_their_entry_points(tmp_path, monkeypatch):
    install_distribution(tmp_path, "stamping_found", f"""\
        [{MAILET_GROUP}]
        Stamp = stamping_found:Stamp
        [{MATCHER_GROUP}]
        IsStamped = stamping_found:IsStamped
        """)
    monkeypatch.syspath_prepend(str(tmp_path))

    mailets = discover(MAILET_GROUP, BUILTIN_MAILETS, Mailet)
    matchers = discover(MATCHER_GROUP, BUILTIN_MATCHERS, Matcher)

    assert entry_point_value(mailets["Stamp"]) == "stamping_found:Stamp"
    assert entry_point_value(matchers["IsStamped"]) == "stamping_found:IsStamped"
    assert mailets["Null"] is BUILTIN_MAILETS["Null"]


def test_a_server_started_with_the_distribution_installed_runs_its_mailet(tmp_path):
    install_distribution(tmp_path, "stamping_run", f"""\
        [{MAILET_GROUP}]
        Stamp = stamping_run:Stamp
        [{MATCHER_GROUP}]
        IsStamped = stamping_run:IsStamped
        """)
    script = textwrap.dedent('''
        from tests.unit.mailets.support import container_of, make_mail, memory_env

        container = container_of(memory_env(), """\\
        processors:
          root:
            - mailet: Stamp
              params: {value: third-party}
            - match: IsStamped
              mailet: ToProcessor
              params: {processor: stamped}
          stamped:
            - mailet: Null
          error:
            - mailet: Null
        """)
        mail = make_mail("alice@example.com")
        container.service(mail)
        print(mail.attributes["stamp"])
        ''')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "third-party"


def test_an_entry_point_may_not_give_a_builtin_name_to_another_class(tmp_path, monkeypatch):
    install_distribution(tmp_path, "stamping_clash", f"""\
        [{MAILET_GROUP}]
        Null = stamping_clash:Stamp
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    clash = r"Null = 'stamping_clash:Stamp' of stamping_clash would replace the built-in"
    with pytest.raises(ConfigError, match=clash):
        discover(MAILET_GROUP, BUILTIN_MAILETS, Mailet)


def test_an_entry_point_must_name_a_class_of_its_kind_under_its_own_name(tmp_path, monkeypatch):
    install_distribution(tmp_path, "stamping_wrong", f"""\
        [{MAILET_GROUP}]
        IsStamped = stamping_wrong:IsStamped
        [{MATCHER_GROUP}]
        Stamped = stamping_wrong:IsStamped
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="is not a Mailet class"):
        discover(MAILET_GROUP, BUILTIN_MAILETS, Mailet)
    with pytest.raises(ConfigError, match="names a class whose name is 'IsStamped'"):
        discover(MATCHER_GROUP, BUILTIN_MATCHERS, Matcher)
