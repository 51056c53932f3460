"""Three Cassandra nodes on loopback addresses (127.0.0.2 to 127.0.0.4): RF=3 and QUORUM for real.

Each node is the single-node service's JVM with its own address, data directory and JMX port; the
CQL and storage ports are the stack's (each address has its own). The cluster is always fresh when
first started, so every node starts at once with ``auto_bootstrap: false`` (nothing to stream) and
tokens fixed in advance (interleaved, so each node owns a third of the ring); a node that comes
back later finds its tokens and data where it left them. ``127.0.0.2`` is the seed.

Ready means every node sees every other one up: from each node as coordinator, a read at
consistency ALL of ``system_distributed`` (replicated three times by Cassandra itself) succeeds,
which the coordinator refuses at once while it holds any node down.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .. import processes
from ..settings import StackSettings
from .base import Service, ServiceError
from .cassandra import Cassandra

ADDRESSES = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
NUM_TOKENS = 16
# A node's resident memory beyond its heap (metaspace 50 MiB, code cache, thread stacks, direct
# buffers, mapped jars): measured 230 MiB anonymous + 155 MiB of jars (shared between the nodes)
# after the e2e test, with 240 MiB of the 512 MiB heap in use. Used to refuse a start that cannot fit.
NODE_OVERHEAD_BYTES = 300 * 1024 * 1024
# Any table of the keyspace Cassandra replicates three times on its own; read at ALL from each node.
ALL_NODES_READ = "SELECT id FROM system_distributed.repair_history LIMIT 1"


def interleaved_tokens(node_index: int, nodes: int, per_node: int = NUM_TOKENS) -> list[int]:
    """Tokens ``node_index`` (0-based) owns when ``nodes * per_node`` are spread evenly on Murmur3's ring."""
    total = nodes * per_node
    step = 2**64 // total
    return [-(2**63) + k * step for k in range(node_index, total, nodes)]


def size_bytes(size: str) -> int:
    """A JVM size (``512m``, ``1g``, ``786432k``) in bytes."""
    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    suffix = size[-1:].lower()
    return int(size[:-1]) * units[suffix] if suffix in units else int(size)


def available_memory_bytes() -> int:
    """Memory the machine can give without swapping (the kernel's MemAvailable)."""
    import psutil  # imported late: `status` works without a venv

    return int(psutil.virtual_memory().available)


class ClusterNode(Cassandra):
    """One node of the cluster: the single node's service, moved to its own address and directory."""

    def __init__(self, settings: StackSettings, index: int) -> None:
        super().__init__(settings)
        self.index = index
        self.name = f"cassandra-cluster node {ADDRESSES[index]}"
        self.home = settings.service_dir(CassandraCluster.name) / f"node-{index + 1}"

    @property
    def pid_file(self) -> Path:
        return self.home / "node.pid"

    @property
    def address(self) -> str:
        return ADDRESSES[self.index]

    @property
    def jmx_port(self) -> int:
        return self.settings.ports.cassandra_cluster_jmx + self.index

    @property
    def heap(self) -> str:
        return self.settings.heaps.cassandra_cluster_node

    @property
    def initial_heap(self) -> str:
        # The heap grows to the maximum only under load: three idle nodes then take a third of it.
        return "128m"

    def seeds(self) -> str:
        return f"{ADDRESSES[0]}:{self.settings.ports.cassandra_storage}"

    def jvm_options(self) -> list[str]:
        # Three of these run beside the stack: the serial collector and the C1 compiler only cost
        # the least memory and CPU beyond the heap, which a test cluster's load does not miss.
        return ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=64m",
                # Not -Dcassandra.test.flush_local_schema_changes=false, though each schema change then
                # flushes the system_schema tables on every node (a keyspace of the mail server's 44
                # tables takes 80 to 100 s): a killed node loads its schema before it replays its commit
                # log, so it came back without the keyspace and skipped the keyspace's writes.
                "-XX:MaxDirectMemorySize=256m"]

    @property
    def ring_delay_ms(self) -> int:
        # A node asks the seed for the ring before it joins and gives up after this delay; the seed,
        # started at the same time on a loaded machine, may answer only tens of seconds later. The
        # seed itself hears from nobody on a fresh cluster and waits the whole delay: keep it short.
        return super().ring_delay_ms if self.index == 0 else 60_000

    def config(self) -> dict[str, Any]:
        config = super().config()
        config.pop("allocate_tokens_for_local_replication_factor", None)
        config.update({
            "cluster_name": "mailserver-local-cluster",
            "initial_token": ",".join(str(t) for t in interleaved_tokens(self.index, len(ADDRESSES))),
            # A fresh cluster has nothing to stream: all nodes join at once instead of one by one.
            "auto_bootstrap": False,
            "key_cache_size": "8MiB",
            "file_cache_size": "32MiB",
            "networking_cache_size": "16MiB",
        })
        return config


class CassandraCluster(Service):
    name = "cassandra-cluster"
    start_timeout = 300.0

    def __init__(self, settings: StackSettings) -> None:
        super().__init__(settings)
        self.nodes = [ClusterNode(settings, index) for index in range(len(ADDRESSES))]

    @property
    def hosts(self) -> str:
        """The contact points, as ``CASSANDRA_HOSTS`` and the jobs' ``--cassandra-hosts`` take them."""
        return ",".join(ADDRESSES)

    def node(self, address: str) -> ClusterNode:
        return self.nodes[ADDRESSES.index(address)]

    @property
    def pid_file(self) -> Path:   # the seed's: what `status` shows
        return self.nodes[0].pid_file

    def pids(self) -> list[int]:
        return [pid for node in self.nodes for pid in node.pids()]

    def log_files(self) -> list[Path]:
        return [f for node in self.nodes for f in node.log_files()]

    def ensure_started(self) -> bool:
        """Start every node that is not running (one killed node comes back alone)."""
        stopped = [node for node in self.nodes if not node.pids()]
        if not stopped:
            return False
        self.check_memory(len(stopped))
        for node in stopped:
            node.prepare()
            node.start()
        return True

    def check_memory(self, nodes: int) -> None:
        """Refuse to start nodes the machine cannot hold: the kernel would kill some JVM, maybe another's."""
        needed = nodes * (size_bytes(self.settings.heaps.cassandra_cluster_node) + NODE_OVERHEAD_BYTES)
        available = available_memory_bytes()
        if available < needed:
            raise ServiceError(
                f"{self.name}: {nodes} node(s) need about {processes.human_bytes(needed)} and "
                f"{processes.human_bytes(available)} is available; free memory or lower "
                "STACK_CASSANDRA_CLUSTER_HEAP")

    def prepare(self) -> None:
        for node in self.nodes:
            node.prepare()

    def start(self) -> None:
        self.ensure_started()

    def stop(self) -> None:
        with ThreadPoolExecutor(len(self.nodes)) as pool:   # each drains for seconds: together
            list(pool.map(lambda node: node.stop(), self.nodes))

    def wait_ready(self, timeout: float | None = None) -> str:
        """Like every service's, but a node that exits (not only the last one) fails the wait at once."""
        deadline = time.monotonic() + (timeout or self.start_timeout)
        last_error = "not probed"
        while time.monotonic() < deadline:
            exited = [node for node in self.nodes if not node.pids()]
            if exited:
                raise ServiceError(f"{self.name}: node(s) {', '.join(n.address for n in exited)} not running\n"
                                   + "\n".join(n.tail_logs(30) for n in exited))
            try:
                return self.probe()
            except Exception as exc:  # any failure means "not yet"; the deadline decides
                last_error = f"{type(exc).__name__}: {exc}"
            time.sleep(1.0)
        raise ServiceError(f"{self.name} not ready within {timeout or self.start_timeout:.0f}s ({last_error})")

    def probe(self) -> str:
        views = [self.node_sees_every_node(address) for address in ADDRESSES]
        return (f"CQL {', '.join(ADDRESSES)} port {self.settings.ports.cassandra}: each of the 3 nodes "
                f"sees the others up (release {views[0]})")

    def node_sees_every_node(self, address: str) -> str:
        """A read at ALL with ``address`` as coordinator, which refuses it while it holds any node down.

        Only ``address`` is connected to (the whitelist), so the answer is that node's view. Returns
        its release.
        """
        from cassandra import ConsistencyLevel
        from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
        from cassandra.policies import WhiteListRoundRobinPolicy
        from cassandra.query import SimpleStatement

        only_this_node = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([address]), request_timeout=5)
        cluster = Cluster([address], port=self.settings.ports.cassandra, protocol_version=4,
                          execution_profiles={EXEC_PROFILE_DEFAULT: only_this_node},
                          connect_timeout=3, control_connection_timeout=3)
        try:
            session = cluster.connect()
            session.execute(SimpleStatement(ALL_NODES_READ, consistency_level=ConsistencyLevel.ALL))
            return str(session.execute("SELECT release_version FROM system.local").one().release_version)
        finally:
            cluster.shutdown()
