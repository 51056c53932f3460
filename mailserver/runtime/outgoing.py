"""Remote-delivery workers configured by the RemoteDelivery pairs of ``mailetcontainer.yaml``.

James runs the delivery threads inside the RemoteDelivery mailet; here the mailet only hands
mail to its ``outgoing`` queue and the ``outgoing`` role runs the workers. Both read the same
pair parameters, so the YAML stays the one place to configure retries and threads.
"""

from __future__ import annotations

from dataclasses import dataclass

from mailserver.delivery.config import DeliveryConfig
from mailserver.mailets.api import Params
from mailserver.mailets.config import ContainerSpec
from mailserver.mailets.remote import RemoteDelivery
from mailserver.queue.api import OUTGOING


@dataclass(frozen=True)
class OutgoingSpec:
    queue: str
    config: DeliveryConfig
    threads: int


def outgoing_specs(spec: ContainerSpec, *, helo_name: str) -> list[OutgoingSpec]:
    """One entry per outgoing queue named by a RemoteDelivery pair (the first pair wins)."""
    found: dict[str, OutgoingSpec] = {}
    for processor in spec.processors.values():
        for pair in processor.pairs:
            if pair.mailet != RemoteDelivery.name:
                continue
            params = Params(pair.mailet, pair.params, RemoteDelivery.PARAMS)
            queue = params.get("outgoing", OUTGOING) or OUTGOING
            if queue in found:
                continue
            try:
                config = DeliveryConfig(
                    delay_times=params.get("delayTime", "21600000") or "21600000",
                    max_retries=params.integer("maxRetries", 5, minimum=0),
                    max_dns_problem_retries=params.integer("maxDnsProblemRetries", 0, minimum=0),
                    helo_name=params.get("heloName", helo_name) or helo_name,
                    # James gives both timeouts in milliseconds.
                    connection_timeout=params.integer("connectiontimeout", 60_000, minimum=1) / 1000,
                    timeout=params.integer("timeout", 180_000, minimum=1) / 1000,
                    start_tls=params.boolean("startTLS", True),
                    bounce_processor=params.get("bounceProcessor", "bounces") or "bounces",
                    load_balancing=params.boolean("loadBalancing", True))
            except ValueError as exc:
                raise pair.where.error(f"RemoteDelivery: {exc}") from exc
            threads = params.integer("deliveryThreads", 1, minimum=1)
            found[queue] = OutgoingSpec(queue, config, threads)
    return list(found.values())

