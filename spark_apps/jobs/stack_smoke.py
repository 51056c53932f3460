"""Smoke job of the platform: read a Cassandra table through the connector, write a result table.

Input  ``<keyspace>.smoke_messages(user text, message_id timeuuid, size bigint)``
Output ``<keyspace>.smoke_totals(user text PRIMARY KEY, message_count bigint, total_size bigint)``

The shape is the one of a quota recomputation (per-user count and size); it proves the
connector, the token-range read and the write path work from spark-submit and from Airflow.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from spark_apps.common.session import build_session
from spark_apps.common.settings import parse

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

SOURCE_TABLE = "smoke_messages"
RESULT_TABLE = "smoke_totals"


def totals_per_user(messages: DataFrame) -> DataFrame:
    """Pure transformation: message count and total size per user."""
    from pyspark.sql import functions as F

    return messages.groupBy("user").agg(
        F.count(F.lit(1)).alias("message_count"),
        F.sum("size").cast("long").alias("total_size"),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    _, settings = parse(parser, argv)
    spark = build_session("stack-smoke", settings)
    try:
        messages = (spark.read.format("org.apache.spark.sql.cassandra")
                    .options(keyspace=settings.keyspace, table=SOURCE_TABLE).load())
        totals = totals_per_user(messages)
        (totals.write.format("org.apache.spark.sql.cassandra")
         .options(keyspace=settings.keyspace, table=RESULT_TABLE).mode("append").save())
        report = {"users": totals.count(), "messages": messages.count()}
        print("REPORT " + json.dumps(report))
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
