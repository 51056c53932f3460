"""Reading James's tables through the Spark Cassandra Connector (token-range splits, pushdown).

Names are the lower-case forms Cassandra stores (James declares mixedCase without quotes).
Ids (timeuuid) come back as strings; the repair side turns them into ``uuid.UUID`` again.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FLAG_COLUMNS = ("flaganswered", "flagdeleted", "flagdraft", "flagflagged", "flagrecent", "flagseen", "flaguser")
MESSAGE_METADATA_COLUMNS = ("threadid", "modseq", *FLAG_COLUMNS, "userflags", "internaldate", "save_date",
                            "bodystartoctet", "fullcontentoctets", "headercontent")
USER_NAMESPACE = "#private"


def read_table(spark: SparkSession, settings: JobSettings, table: str,
               columns: Iterable[str] | None = None, options: Mapping[str, str] | None = None) -> DataFrame:
    """``options``: more connector read options of this table (e.g. ``directJoinSetting``)."""
    df = (spark.read.format("org.apache.spark.sql.cassandra")
          .options(**(options or {}), keyspace=settings.keyspace, table=table).load())
    return df.select(*columns) if columns is not None else df


def user_mailbox_ids(spark: SparkSession, settings: JobSettings, user: str) -> list[str]:
    """Ids of the personal mailboxes of ``user`` (partition read of ``mailboxPathV3``)."""
    from pyspark.sql import functions as F

    paths = read_table(spark, settings, "mailboxpathv3", ["namespace", "user", "mailboxid"])
    rows = paths.filter((F.col("namespace") == USER_NAMESPACE) & (F.col("user") == user.lower())).collect()
    return [r["mailboxid"] for r in rows]


def as_uuid(value: str | uuid.UUID | None) -> uuid.UUID | None:
    if value is None or isinstance(value, uuid.UUID):
        return value
    return uuid.UUID(value)
