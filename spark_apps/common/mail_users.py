"""Who the per-user procedures visit, and which mailboxes are theirs.

James walks the users repository (the ``user`` table) and, for each user, the mailboxes of the
``#private`` namespace. A Spark job reads both tables once. The users it visits are the
registered ones plus the owners of personal mailboxes: a mailbox owner missing from the
repository (an import, a user removed without its mailboxes) still has messages whose
projections must be right (docs/compatibility.md). ``--user`` narrows that to one user.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_apps.common.cassandra_tables import USER_NAMESPACE, read_table
from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def private_mailboxes(spark: SparkSession, settings: JobSettings, user: str | None = None) -> DataFrame:
    """(user, mailboxid) of every personal mailbox, or of ``user``'s (partition key: pushed down)."""
    from pyspark.sql import functions as F

    paths = read_table(spark, settings, "mailboxpathv3", ["namespace", "user", "mailboxid"])
    wanted = F.col("namespace") == USER_NAMESPACE
    if user is not None:
        wanted = wanted & (F.col("user") == user)
    return paths.filter(wanted).select("user", "mailboxid")


def registered_users(spark: SparkSession, settings: JobSettings) -> DataFrame:
    """(user) of the users repository."""
    return read_table(spark, settings, "user", ["name"]).withColumnRenamed("name", "user")


def users_in_scope(registered: DataFrame, mailboxes: DataFrame, user: str | None = None) -> DataFrame:
    """Pure: the distinct users to visit: registered or owning a personal mailbox, or just ``user``."""
    from pyspark.sql import functions as F

    if user is not None:
        return mailboxes.sparkSession.createDataFrame([(user,)], "user string")
    return registered.select("user").unionByName(mailboxes.select("user")).filter(F.col("user").isNotNull()).distinct()
