"""Platform smoke test: Cassandra -> Spark (through spark-submit) -> Cassandra, checked by Airflow."""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import DAG, Param, task
from mailplatform.dag_defaults import dag_arguments
from mailplatform.operators.spark_job import SparkJobOperator
from mailplatform.param_checks import check_params_task, form_params
from mailplatform.procedure_dag import CASSANDRA_POOL

from mailserver.cassandra.config import DEFAULT_KEYSPACE

DOC = """
### Platform smoke test

Proves, end to end, that this Airflow can drive Spark against the cluster's Cassandra:

1. **seed** writes `users x messages_per_user` rows into `<keyspace>.smoke_messages`
   (creating the keyspace and tables when missing, emptying them otherwise);
2. **spark_totals** runs the `stack_smoke` PySpark job with `spark-submit`: it reads the table
   through the Spark Cassandra Connector and writes per-user totals to `<keyspace>.smoke_totals`;
3. **verify** reads the totals back and fails unless every user's count and size match.

Run it after installing or upgrading the platform, or when a maintenance DAG fails in its
Spark step and you want to know whether Spark itself is healthy. It only touches the
`smoke_*` tables of the chosen keyspace (default `platform_smoke`, never James's keyspace).
`seed` and `spark_totals` take the `cassandra_maintenance` pool's single slot like every
procedure: while a procedure runs, the smoke test waits instead of sharing Cassandra with it.
"""

PARAMS, FORM_RULES = form_params({
    "keyspace": Param("platform_smoke", type="string", pattern="^[a-z][a-z0-9_]{0,47}$",
                      description="Keyspace for the smoke tables (never the mail keyspace)"),
    "users": Param(3, type="integer", minimum=1, maximum=1000),
    "messages_per_user": Param(5, type="integer", minimum=1, maximum=1000),
})

with DAG(
    dag_id="platform_smoke",
    description="Cassandra -> Spark -> Cassandra round trip through SparkSubmitOperator",
    doc_md=DOC,
    schedule=None,
    tags=["platform", "smoke", "spark", "cassandra"],
    params=PARAMS,
    **dag_arguments(retry_delay=timedelta(seconds=30)),
) as dag:
    checked = check_params_task(FORM_RULES)

    @task(pool=CASSANDRA_POOL)
    def seed(params: dict | None = None) -> dict[str, list[int]]:
        from mailplatform.hooks.cassandra import CassandraHook

        assert params is not None
        ks, users, per_user = params["keyspace"], params["users"], params["messages_per_user"]
        if ks == DEFAULT_KEYSPACE:
            raise ValueError("the smoke test never writes into the mail keyspace")
        expected: dict[str, list[int]] = {}
        with CassandraHook().session(keyspace=ks) as session:
            session.execute(f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = "
                            "{'class': 'SimpleStrategy', 'replication_factor': 1}")
            session.execute(f"CREATE TABLE IF NOT EXISTS {ks}.smoke_messages "
                            "(user text, message_id timeuuid, size bigint, PRIMARY KEY (user, message_id))")
            session.execute(f"CREATE TABLE IF NOT EXISTS {ks}.smoke_totals "
                            "(user text PRIMARY KEY, message_count bigint, total_size bigint)")
            session.execute(f"TRUNCATE {ks}.smoke_messages")
            session.execute(f"TRUNCATE {ks}.smoke_totals")
            insert = session.prepare(f"INSERT INTO {ks}.smoke_messages (user, message_id, size) "
                                     "VALUES (?, now(), ?)")
            for u in range(users):
                user = f"user{u}@smoke.test"
                sizes = [100 * (u + 1) + m for m in range(per_user)]
                for size in sizes:
                    session.execute(insert, (user, size))
                expected[user] = [len(sizes), sum(sizes)]
        return expected

    spark_totals = SparkJobOperator(
        task_id="spark_totals",
        job="stack_smoke",
        job_args=["--keyspace", "{{ params.keyspace }}"],
        pool=CASSANDRA_POOL,
    )

    @task
    def verify(expected: dict[str, list[int]], params: dict | None = None) -> dict[str, int]:
        from mailplatform.hooks.cassandra import CassandraHook

        assert params is not None
        with CassandraHook().session(keyspace=params["keyspace"]) as session:
            rows = session.execute(f"SELECT user, message_count, total_size FROM {params['keyspace']}.smoke_totals")
            actual = {r.user: [r.message_count, r.total_size] for r in rows}
        if actual != expected:
            raise ValueError(f"Spark totals differ from the seeded data: expected {expected}, got {actual}")
        return {"users": len(actual), "messages": sum(v[0] for v in actual.values())}

    seeded = seed()
    checked >> seeded
    seeded >> spark_totals
    verify(seeded).set_upstream(spark_totals)
