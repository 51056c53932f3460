"""The event bus's queues as ``QueueSpec``: what a queue migration re-declares them as.

Built from the declarations the bus applies at start (``declarations.py``), so the migration and
the bus cannot disagree. The dead-letter and shared queues keep the bindings their declarations
give; a group's work queue is bound to its retry exchange only while its group is required (the
nodes bind and unbind it), so its spec has no binding and the migration keeps the broker's.
"""

from __future__ import annotations

from collections.abc import Collection

from mailserver.events.declarations import Binding, Declaration, Queue, base_declarations, group_declarations
from mailserver.events.naming import BusNames
from mailserver.rabbitmq_queues import BindingSpec, QueueSpec, QueueType


def _specs(declarations: list[Declaration], with_bindings: bool) -> list[QueueSpec]:
    bindings = [d for d in declarations if isinstance(d, Binding)] if with_bindings else []
    return [QueueSpec(q.name, dict(q.arguments), q.durable, q.exclusive, q.auto_delete,
                      tuple(BindingSpec(b.exchange, b.routing_key) for b in bindings if b.queue == q.name))
            for q in declarations if isinstance(q, Queue)]


def bus_queue_specs(names: BusNames, queue_type: QueueType, present: Collection[str]) -> list[QueueSpec]:
    """The bus's queues among ``present`` (queue names on the broker): base queues, then each group's."""
    specs = _specs(base_declarations(names, queue_type), with_bindings=True)
    groups = sorted({g for queue in present if (g := names.group_of_work_queue(queue)) is not None})
    for group in groups:
        specs += _specs(group_declarations(names, queue_type, group), with_bindings=False)
    return [s for s in specs if s.name in present]
