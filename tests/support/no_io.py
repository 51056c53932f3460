"""Hooks must do no I/O when built (Airflow builds them while parsing DAG files): what tries to."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

T = TypeVar("T")


def connections_while_building(monkeypatch: pytest.MonkeyPatch, hook_class: type,
                               build: Callable[[], T]) -> tuple[list[tuple[Any, ...]], T]:
    """Every socket connect and Airflow connection lookup tried while ``build()`` ran (each refused),
    and what it built."""
    attempts: list[tuple[Any, ...]] = []

    def refuse(*args: Any, **_kwargs: Any) -> None:
        attempts.append(args)   # kept even if the constructor swallowed the error below
        raise AssertionError(f"{hook_class.__name__} opened a connection while being built")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(hook_class, "get_connection", refuse)
    return attempts, build()
