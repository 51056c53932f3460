"""Session-wide test setup.

Airflow reads its configuration when first imported, so the test Airflow (SQLite database
under ``.stack/pytest-airflow``, this repository's dags/ and plugins/) is configured here at
import time, before any test module imports it. The production stack's Airflow database is
never touched by tests, even when ``.stack/env.sh`` was sourced.

``make test`` runs two pytest-xdist workers: the unit tests, which need no server, on one (then the
three-node Cassandra test), everything else in its usual order on the other
(``pytest_xdist_make_scheduler``). The unit tests are CPU work, the rest mostly waits on servers
and schedulers, so the two overlap well on two cores. Each worker has a test Airflow of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
STACK_HOME = Path(os.environ.get("STACK_HOME", REPO / ".stack"))
# Under pytest-xdist each worker has its own (two processes must not migrate one SQLite file).
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
AIRFLOW_TEST_HOME = STACK_HOME / ("pytest-airflow" + (f"-{_WORKER}" if _WORKER else ""))
AIRFLOW_TEST_HOME.mkdir(parents=True, exist_ok=True)

os.environ.update({
    "AIRFLOW_HOME": str(AIRFLOW_TEST_HOME),
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{AIRFLOW_TEST_HOME / 'airflow.db'}",
    "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
    "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(AIRFLOW_TEST_HOME / "logs"),
    "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), str(REPO / "plugins"), os.environ.get("PYTHONPATH")])),
})
# spark-submit and the airflow CLI are console scripts of this virtualenv.
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])

from include.connections import airflow_connections  # noqa: E402
from include.stack import artifacts, spark_cds  # noqa: E402
from include.stack.endpoints import Endpoints  # noqa: E402
from include.stack.settings import StackSettings  # noqa: E402
from tests.support.password_cost import james_cost, production_cost  # noqa: E402
from tests.support.stack import StackUnavailable, resolve, wait_until_answering  # noqa: E402

_SESSION_RESOURCES = pytest.StashKey[ExitStack]()


def pytest_configure(config: pytest.Config) -> None:
    """Password hashing at James's cost for the whole session, collection included
    (``tests/support/password_cost.py``)."""
    resources = ExitStack()
    resources.enter_context(james_cost())
    config.stash[_SESSION_RESOURCES] = resources


def pytest_unconfigure(config: pytest.Config) -> None:
    resources = config.stash.get(_SESSION_RESOURCES, None)
    if resources is not None:
        resources.close()


@pytest.fixture(autouse=True)
def password_cost(request: pytest.FixtureRequest) -> Iterator[None]:
    """The shipped hashing cost for tests marked ``production_password_cost``."""
    if request.node.get_closest_marker("production_password_cost"):
        with production_cost():
            yield
    else:
        yield


@pytest.fixture(scope="session")
def stack() -> Iterator[Endpoints]:
    """The real backing services, once per session. Unreachable means failure, never skip."""
    with ExitStack() as resources:
        try:
            ep, source = resolve(resources)
            wait_until_answering(ep)
        except StackUnavailable as exc:
            pytest.fail(f"backing services unavailable: {exc}", pytrace=False)
        os.environ.update(ep.to_env())
        os.environ.update(airflow_connections(ep))
        print(f"\n[stack] services from {source}: cassandra {ep.cassandra_hosts}:{ep.cassandra_port}, "
              f"opensearch {ep.opensearch_url}, s3 {ep.s3_endpoint}, rabbitmq {ep.rabbitmq_management_url}")
        yield ep


@pytest.fixture(scope="session")
def unique() -> str:
    """A short token to keep names of one test session apart from another's."""
    return uuid.uuid4().hex[:8]


@pytest.fixture(scope="session")
def spark_env(stack: Endpoints) -> dict[str, str]:
    """Environment for spark-submit / pyspark: JDK 17, connector jars, endpoints."""
    settings = StackSettings()
    jars = artifacts.spark_jars(settings)
    if not jars:
        pytest.fail("Spark connector jars missing: run `make bootstrap` (python -m include.stack fetch)",
                    pytrace=False)
    env = dict(os.environ)
    env.update({
        "JAVA_HOME": settings.java_home,
        "SPARK_CONNECTOR_JARS": ",".join(str(j) for j in jars),
        "SPARK_LOCAL_DIRS": str(STACK_HOME / "spark-tmp"),
        # The suite's jobs are small and short-lived: most of a spark-submit is JVM start-up and
        # class loading, which the C1 compiler and the serial collector shorten (about a quarter
        # of a job's time here). Production submits keep the JVM defaults.
        "SPARK_SUBMIT_OPTS": os.environ.get("SPARK_SUBMIT_OPTS", spark_cds.SHORT_JOB_JVM_OPTIONS),
    })
    # A class-data-sharing archive, recorded once per JDK and jar set: a third off each job's start-up.
    archive = spark_cds.ensure_archive(STACK_HOME / "spark-cds", env, jars, base_options=env["SPARK_SUBMIT_OPTS"],
                                       cassandra_host=stack.cassandra_hosts.split(",")[0],
                                       cassandra_port=stack.cassandra_port)
    if archive is not None:
        env["SPARK_SUBMIT_OPTS"] = spark_cds.submit_options(archive, env["SPARK_SUBMIT_OPTS"])
    os.environ.update({k: env[k] for k in ("JAVA_HOME", "SPARK_CONNECTOR_JARS", "SPARK_LOCAL_DIRS",
                                           "SPARK_SUBMIT_OPTS")})
    (STACK_HOME / "spark-tmp").mkdir(parents=True, exist_ok=True)
    return env


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """Airflow's metadata database for ``dag.test()``: SQLite, migrated once per session."""
    result = subprocess.run([str(Path(sys.executable).parent / "airflow"), "db", "migrate"],
                            capture_output=True, text=True, env=dict(os.environ), timeout=900)
    if result.returncode != 0:
        pytest.fail("airflow db migrate failed:\n" + result.stdout[-3000:] + result.stderr[-3000:], pytrace=False)
    return AIRFLOW_TEST_HOME / "airflow.db"


@pytest.fixture(scope="session")
def cassandra_config(stack: Endpoints, unique: str):
    from mailserver.cassandra.config import CassandraConfig

    return CassandraConfig(hosts=tuple(stack.cassandra_hosts.split(",")), port=stack.cassandra_port,
                           keyspace=f"test_{unique}")


@pytest.fixture(scope="session")
def cassandra(cassandra_config):
    """One keyspace with the whole James schema for the test session (created once, dropped at the end).

    Tests share it: they isolate themselves with unique users, mailboxes and ids, never by
    assuming empty tables.
    """
    from tests.support.keyspaces import scratch_keyspace

    with scratch_keyspace(cassandra_config) as session:
        yield session


@pytest.fixture
def faults(cassandra):
    """The fault seam of the session keyspace, cleared after each test."""
    cassandra.faults.clear()
    yield cassandra.faults
    cassandra.faults.clear()


@pytest.fixture(scope="session")
def s3_blobs(stack: Endpoints, unique: str):
    """An S3 blob store on the real server with a per-session default bucket, emptied at the end."""
    from mailserver.blob.s3 import S3BlobStore, S3Config

    config = S3Config(endpoint_url=stack.s3_endpoint, access_key=stack.s3_access_key,
                      secret_key=stack.s3_secret_key, region=stack.s3_region,
                      default_bucket=f"mailbox-{unique}")
    store = S3BlobStore(config)
    yield store
    store.delete_bucket(store.default_bucket)


@pytest.fixture(scope="session")
def maintenance_cassandra(cassandra_config):
    """A second keyspace with the whole schema, for the maintenance procedures only (created once).

    The procedures scan whole tables: in the shared keyspace they would meet the deliberate
    inconsistencies other tests leave behind. Maintenance tests leave their tables consistent.
    """
    from dataclasses import replace

    from tests.support.keyspaces import scratch_keyspace

    with scratch_keyspace(replace(cassandra_config, keyspace=cassandra_config.keyspace + "_maint")) as session:
        yield session


@pytest.fixture
def maintenance_keyspace(maintenance_cassandra):
    """The maintenance keyspace, emptied first: what a procedure finds is what the test put there."""
    from tests.support.maintenance import clear_keyspace

    maintenance_cassandra.faults.clear()
    clear_keyspace(maintenance_cassandra)
    yield maintenance_cassandra
    maintenance_cassandra.faults.clear()


# Tests that bring up the stack's own Airflow (scheduler, dag-processor, PostgreSQL, a mail server).
# Once up it idles at about a fifth of a core until the session ends, so these tests run last.
STACK_AIRFLOW_TESTS = ("tests/e2e/airflow_api/", "tests/e2e/maintenance/live_airflow/", "tests/e2e/test_run_command.py",
                       "tests/e2e/test_readme_first_mail.py")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    def needs_stack_airflow(item: pytest.Item) -> bool:
        path = Path(item.path)
        return path.is_relative_to(REPO) and path.relative_to(REPO).as_posix().startswith(STACK_AIRFLOW_TESTS)

    items.sort(key=needs_stack_airflow)   # stable: every other test keeps its order


# Tests that share nothing with the other server tests (the three-node Cassandra is a stack service of
# its own): a work unit apart, which the worker of the unit tests takes once they are done.
APART_FROM_THE_SERVER_TESTS = ("tests/e2e/mailflow/test_cassandra_cluster_node_loss.py",)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under pytest-xdist, three work units: the unit tests; the three-node Cassandra test; every other
    test in collection order.

    The tests that use servers share one stack, one keyspace, the Spark standalone cluster and the
    stack's Airflow, and some stop and start a backend: they run on one worker, one after the other,
    as without xdist. xdist hands out the largest unit first (the unit tests), then the next to the
    other worker, and the last to whichever worker has two tests or fewer left.
    """
    from xdist.scheduler import LoadScopeScheduling

    class UnitTestsBesideServerTests(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith("tests/unit/"):
                return "unit"
            return "apart" if nodeid.startswith(APART_FROM_THE_SERVER_TESTS) else "servers"

    return UnitTestsBesideServerTests(config, log)


@pytest.hookimpl(trylast=True)   # after the runner's own sessionfinish, which tears down what fixtures remain
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After every fixture's teardown: stop the Spark driver JVM and the Cassandra sessions that jobs run
    in this process keep for the next job (``tests/support/spark_in_process.py``), before interpreter exit."""
    from tests.support.spark_in_process import release_driver

    release_driver()
