"""No test picks a port before binding it: the kernel could give that port to an outgoing connection."""

from __future__ import annotations

import ast
import socket
from pathlib import Path

from tests.support.ports import bindable, ephemeral_range_start, unused_port

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "tests" / "support" / "ports.py"


def _returns_port_of_a_socket_it_closes(function: ast.FunctionDef) -> bool:
    """``with socket.socket() as s: s.bind((host, 0)); return s.getsockname()[1]``, and its kin."""
    for node in ast.walk(function):
        if not isinstance(node, ast.With):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Return) and inner.value is not None and "getsockname" in ast.unparse(inner.value):
                return True
    return False


def racy_port_pickers() -> list[str]:
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "bench").rglob("*.py")):
        if path == HARNESS:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and _returns_port_of_a_socket_it_closes(node):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    return found


def test_no_helper_hands_out_a_port_whose_socket_it_closed():
    assert racy_port_pickers() == []


def test_the_scan_finds_the_racy_shape(tmp_path):
    source = ("import socket\n"
              "def free_port():\n"
              "    with socket.socket() as s:\n"
              "        s.bind(('127.0.0.1', 0))\n"
              "        return s.getsockname()[1]\n")
    function = ast.parse(source).body[1]
    assert isinstance(function, ast.FunctionDef)
    assert _returns_port_of_a_socket_it_closes(function)


def test_ports_lie_below_the_ephemeral_range_are_free_and_never_repeat():
    ports = [unused_port() for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(port < ephemeral_range_start() for port in ports)
    for port in ports[:5]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_a_port_someone_listens_on_is_not_bindable():
    port = unused_port()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        assert not bindable(port, "127.0.0.1")
    assert bindable(port, "127.0.0.1")
