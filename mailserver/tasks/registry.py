"""Task types by name: how a worker rebuilds a task submitted on another node.

Each process registers the types it can run, with a factory closing over its own collaborators
(queues, repositories, session ...): ``registry.register("clear-mail-queue", lambda p: ...)``.
A worker only claims tasks whose type it knows, so a mixed-version cluster leaves unknown types
to the nodes that have them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from mailserver.tasks.api import Task

TaskFactory = Callable[[dict[str, Any]], Task]


class UnknownTaskType(LookupError):
    pass


class TaskRegistry:
    def __init__(self) -> None:
        self._factories: dict[str, TaskFactory] = {}
        self._lock = threading.Lock()

    def register(self, type_: str, factory: TaskFactory) -> None:
        with self._lock:
            self._factories[type_] = factory

    def create(self, type_: str, parameters: dict[str, Any]) -> Task:
        factory = self._factories.get(type_)
        if factory is None:
            raise UnknownTaskType(f"no task type '{type_}' is registered on this node")
        return factory(parameters)

    def __contains__(self, type_: object) -> bool:
        return type_ in self._factories

    def types(self) -> list[str]:
        return sorted(self._factories)
