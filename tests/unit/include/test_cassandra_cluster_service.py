"""The three-node Cassandra of the stack: one address, data directory and JMX port per node, one ring."""

from __future__ import annotations

import itertools

import pytest

from include.stack.manager import PROFILES, SERVICE_CLASSES, StackManager
from include.stack.services import cassandra_cluster
from include.stack.services.base import ServiceError
from include.stack.services.cassandra import Cassandra
from include.stack.services.cassandra_cluster import ADDRESSES, CassandraCluster, interleaved_tokens
from include.stack.settings import StackSettings

MURMUR3_MIN, MURMUR3_MAX = -(2**63), 2**63 - 1


def option(command: list[str], name: str) -> str:
    values = [arg.split("=", 1)[1] for arg in command if arg.startswith(f"-D{name}=")]
    assert len(values) == 1, f"{name} given {len(values)} times"
    return values[0]


@pytest.fixture
def cluster(tmp_path) -> CassandraCluster:
    return CassandraCluster(StackSettings(root=tmp_path))


def test_the_nodes_share_the_ring_evenly_with_tokens_of_their_own():
    tokens = [interleaved_tokens(i, 3) for i in range(3)]
    assert all(len(t) == 16 for t in tokens)
    ring = sorted(t for node in tokens for t in node)
    assert len(set(ring)) == 48 and MURMUR3_MIN <= ring[0] and ring[-1] <= MURMUR3_MAX
    gaps = {b - a for a, b in itertools.pairwise(ring)}
    assert gaps == {2**64 // 48}
    # Interleaved: walking the ring, the owners take turns, so each node holds a third of it.
    owner = {t: i for i, node in enumerate(tokens) for t in node}
    assert [owner[t] for t in ring[:6]] == [0, 1, 2, 0, 1, 2]


def test_each_node_listens_on_its_address_joins_the_seed_and_keeps_its_data_apart(cluster):
    configs = [node.config() for node in cluster.nodes]
    assert [c["listen_address"] for c in configs] == list(ADDRESSES)
    assert [c["rpc_address"] for c in configs] == list(ADDRESSES)
    storage_port = cluster.settings.ports.cassandra_storage
    assert {c["seed_provider"][0]["parameters"][0]["seeds"] for c in configs} == {f"127.0.0.2:{storage_port}"}
    assert {c["cluster_name"] for c in configs} == {"mailserver-local-cluster"}
    assert all(c["auto_bootstrap"] is False and c["num_tokens"] == 16 for c in configs)
    assert [c["initial_token"] for c in configs] == [",".join(map(str, interleaved_tokens(i, 3))) for i in range(3)]
    commands = [node.command() for node in cluster.nodes]
    assert len({option(c, "cassandra.storagedir") for c in commands}) == 3
    assert len({option(c, "cassandra.config") for c in commands}) == 3
    # Local JMX binds 127.0.0.1 whatever the node's address: three ports, none the single node's.
    jmx = [int(option(c, "cassandra.jmx.local.port")) for c in commands]
    base = cluster.settings.ports.cassandra_cluster_jmx
    assert jmx == [base, base + 1, base + 2] and cluster.settings.ports.cassandra_jmx not in jmx
    assert {node.pid_file for node in cluster.nodes} == {cluster.home / f"node-{n}" / "node.pid" for n in (1, 2, 3)}


def test_only_the_nodes_that_join_others_wait_long_for_the_seed(cluster):
    delays = [int(option(node.command(), "cassandra.ring_delay_ms")) for node in cluster.nodes]
    assert delays[0] == 1000 and delays[1] == delays[2] >= 30_000


def test_the_single_node_keeps_its_own_address_ports_and_token_allocation(tmp_path):
    settings = StackSettings(root=tmp_path)
    single = Cassandra(settings)
    config, command = single.config(), single.command()
    assert (config["listen_address"], config["seed_provider"][0]["parameters"][0]["seeds"]) == \
        ("127.0.0.1", f"127.0.0.1:{settings.ports.cassandra_storage}")
    assert config["allocate_tokens_for_local_replication_factor"] == 1 and "initial_token" not in config
    assert option(command, "cassandra.jmx.local.port") == str(settings.ports.cassandra_jmx)
    heap = settings.heaps.cassandra
    assert f"-Xms{heap}" in command and f"-Xmx{heap}" in command and "-XX:+UseG1GC" in command


def test_the_cluster_is_started_by_name_only_and_stopped_by_down():
    assert "cassandra-cluster" in SERVICE_CLASSES
    assert "cassandra-cluster" not in PROFILES["all"] and "cassandra-cluster" not in PROFILES["backends"]


def test_a_start_the_machine_cannot_hold_is_refused_with_the_setting_to_change(cluster, monkeypatch):
    monkeypatch.setattr(cassandra_cluster, "available_memory_bytes", lambda: 64 * 1024**2)
    with pytest.raises(ServiceError, match="STACK_CASSANDRA_CLUSTER_HEAP"):
        cluster.ensure_started()
    assert not cluster.pids()


def test_status_of_a_stopped_cluster_says_stopped(tmp_path):
    manager = StackManager(StackSettings(root=tmp_path), log=lambda _m: None)
    [health] = manager.status(["cassandra-cluster"])
    assert (health.running, health.healthy, health.detail) == (False, False, "stopped")
