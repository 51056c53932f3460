"""mailetcontainer.yaml: the shipped chain builds; every mistake fails the start with file:line and name."""

from __future__ import annotations

import pytest

from mailserver.mailets import config
from mailserver.mailets.api import ConfigError
from mailserver.mailets.container import postmaster_address
from mailserver.mailets.matchers import Not, Or
from tests.unit.mailets.support import Env, container_of

MINIMAL = """\
processors:
  root:
    - mailet: Null
  error:
    - mailet: Null
"""


def test_the_shipped_chain_has_james_distributed_processors(env: Env):
    container = container_of(env)
    assert set(container.processors) == {"root", "transport", "local-delivery", "relay", "local-address-error",
                                         "relay-denied", "bounces", "rrt-error", "error"}
    transport = container.processors["transport"]
    assert [p.mailet.name for p in transport.pairs] == [
        "RemoveMimeHeader", "RemoveMimeHeader", "RecipientRewriteTable", "ToProcessor", "ToProcessor", "ToProcessor",
        "ToProcessor"]
    assert isinstance(transport.pairs[5].matcher, Or)
    error = container.processors["error"]
    assert isinstance(error.pairs[1].matcher, Not)
    assert error.pairs[2].on_mailet_exception == "propagate"
    spec = config.load()
    assert spec.spooler.threads == 20 and spec.spooler.error_repository == "cassandra://var/mail/error/"
    assert str(postmaster_address(spec)) == "postmaster@localhost"


def _error(env: Env, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        container_of(env, text)
    return str(info.value)


def test_unknown_mailet_names_file_line_and_mailet(env: Env):
    message = _error(env, MINIMAL + "  transport:\n    - match: All\n      mailet: ToNowhere\n")
    assert message.startswith("test.yaml:8:") and "unknown mailet 'ToNowhere'" in message


def test_unknown_matcher_names_file_line_and_matcher(env: Env):
    message = _error(env, MINIMAL + "  transport:\n    - match: RecipientIsLocalish=x\n      mailet: Null\n")
    assert message.startswith("test.yaml:7:") and "unknown matcher 'RecipientIsLocalish'" in message


def test_bad_matcher_condition(env: Env):
    message = _error(env, MINIMAL + "  transport:\n    - match: RelayLimit=zero\n      mailet: Null\n")
    assert message.startswith("test.yaml:7:") and "RelayLimit" in message
    message = _error(env, MINIMAL + "  transport:\n    - match: SizeGreaterThan=1x\n      mailet: Null\n")
    assert "bad size" in message
    message = _error(env, MINIMAL + "  transport:\n    - match: RemoteAddrInNetwork=300.1.1.1\n      mailet: Null\n")
    assert "bad network" in message


def test_unknown_or_missing_parameter(env: Env):
    message = _error(env, MINIMAL + "  t:\n    - mailet: ToRepository\n      params: {repositoryPth: x}\n")
    assert message.startswith("test.yaml:7:") and "unknown parameter(s) repositoryPth" in message
    message = _error(env, MINIMAL + "  t:\n    - mailet: ToProcessor\n")
    assert "test.yaml:7:" in message and "'processor' is required" in message
    message = _error(env, MINIMAL + "  t:\n    - mailet: ToRepository\n      params: {repositoryPath: nowhere}\n")
    assert "invalid mail repository URL" in message
    message = _error(env, MINIMAL + "  t:\n    - mailet: Bounce\n      params: {passThrough: maybe}\n")
    assert "must be true or false" in message


def test_reference_to_an_undefined_processor(env: Env):
    message = _error(env, MINIMAL + "  t:\n    - mailet: ToProcessor\n      params: {processor: transprot}\n")
    assert message.startswith("test.yaml:7:") and "'transprot', which is not defined" in message
    message = _error(env, MINIMAL + "  t:\n    - mailet: Null\n      onMailetException: nowhere\n")
    assert "test.yaml:7:" in message and "'nowhere'" in message


def test_root_and_error_are_required_and_ghost_is_reserved(env: Env):
    assert "processor 'error' is required" in _error(env, "processors:\n  root:\n    - mailet: Null\n")
    message = _error(env, MINIMAL + "  ghost:\n    - mailet: Null\n")
    assert message.startswith("test.yaml:6:") and "ghost" in message


def test_structure_errors(env: Env):
    assert "unknown key 'mailett'" in _error(env, MINIMAL + "  t:\n    - mailett: Null\n")
    assert "test.yaml:7: processor 't': entry without 'mailet'" in _error(env, MINIMAL + "  t:\n    - match: All\n")
    assert "unknown section 'procesors'" in _error(env, "procesors: {}\n")
    assert _error(env, "processors:\n  root: [\n").startswith("test.yaml:3: invalid YAML: while parsing a flow node")
    assert "unknown matcher 'Nope'" in _error(env, "matchers:\n  m:\n    or: [All, Nope]\n" + MINIMAL
                                              + "  t:\n    - match: m\n      mailet: Null\n")


def test_composite_and_notmatch(env: Env):
    container = container_of(env, MINIMAL + """\
  t:
    - notmatch: SenderIs=a@b.c
      mailet: Null
    - match: {and: [All, {not: [SenderIsNull]}]}
      mailet: Null
""")
    pairs = container.processors["t"].pairs
    assert str(pairs[0].matcher) == "Not(SenderIs=a@b.c)"
    assert str(pairs[1].matcher) == "And(All, Not(SenderIsNull))"


def test_postmaster_needs_a_domain():
    spec = config.parse("context: {postmaster: pm}\n" + MINIMAL)
    with pytest.raises(ConfigError, match=r"no context\.defaultDomain"):
        postmaster_address(spec)
