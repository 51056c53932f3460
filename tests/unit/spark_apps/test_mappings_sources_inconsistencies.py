"""Detection of RRT mapping-sources inconsistencies on tiny local DataFrames shaped as the connector reads them."""

from __future__ import annotations

import pytest

from mailserver.rrt.mapping import Mapping, MappingType
from spark_apps.jobs.solve_mappings_sources_inconsistencies import (
    MISSING,
    ORPHAN,
    expected_projection,
    mappings_sources_inconsistencies,
    split_mapping,
)

pytestmark = pytest.mark.spark

RRT = "user string, domain string, mapping string"
PROJECTION = "mapping_type string, mapping_value string, source string"

EVERY_TYPE = [
    ("bob", "d.tld", "alias:robert@d.tld"),
    ("team", "d.tld", "group:alice@d.tld"),
    ("carl", "d.tld", "forward:carl@elsewhere.tld"),
    ("dan", "d.tld", "dan@other.tld"),
    ("*", "old.tld", "domain:new.tld"),
    ("*", "alias.tld", "domainAlias:d.tld"),
    ("*", "d.tld", "regex:(.*)@d\\.tld:${1}@x.tld"),
    ("gone", "d.tld", "error:mailbox closed"),
]


def detect(spark, rrt, projection):
    found = mappings_sources_inconsistencies(spark.createDataFrame(rrt, RRT), spark.createDataFrame(projection,
                                                                                                   PROJECTION))
    return sorted(tuple(r) for r in found.collect())


def projection_of(rows):
    """What the data layer writes to mappings_sources for each rrt row (CassandraRecipientRewriteTable)."""
    result = []
    for user, domain, text in rows:
        mapping = Mapping.stored(text)
        result.append((mapping.type.prefix, mapping.value, f"{user}@{domain}"))
    return result


def test_the_expected_projection_is_what_the_data_layer_writes_for_every_mapping_type(spark):
    expected = expected_projection(spark.createDataFrame(EVERY_TYPE, RRT))
    assert sorted(tuple(r) for r in expected.collect()) == sorted(projection_of(EVERY_TYPE))
    assert {Mapping.stored(m).type for _, _, m in EVERY_TYPE} == set(MappingType)


def test_split_mapping_agrees_with_the_data_layer():
    for text in [m for _, _, m in EVERY_TYPE] + ["domainAliasx:y", "foo:bar@d.tld", "domain:"]:
        mapping = Mapping.stored(text)
        assert split_mapping(text) == (mapping.type.prefix, mapping.value), text


def test_consistent_tables_yield_nothing(spark):
    assert detect(spark, EVERY_TYPE, projection_of(EVERY_TYPE)) == []


def test_a_missing_projection_row_and_an_orphan_one_are_detected(spark):
    projection = [*projection_of(EVERY_TYPE[1:]), ("group:", "left@d.tld", "team@d.tld")]
    assert detect(spark, EVERY_TYPE, projection) == [
        (MISSING, "alias:", "robert@d.tld", "bob@d.tld"),
        (ORPHAN, "group:", "left@d.tld", "team@d.tld"),
    ]


def test_a_projection_row_under_the_wrong_type_is_both_orphan_and_missing(spark):
    rrt = [("carl", "d.tld", "forward:carl@elsewhere.tld")]
    assert detect(spark, rrt, [("", "forward:carl@elsewhere.tld", "carl@d.tld")]) == [
        (MISSING, "forward:", "carl@elsewhere.tld", "carl@d.tld"),
        (ORPHAN, "", "forward:carl@elsewhere.tld", "carl@d.tld"),
    ]


def test_an_empty_rrt_makes_every_projection_row_orphan(spark):
    assert [kind for kind, *_ in detect(spark, [], projection_of(EVERY_TYPE))] == [ORPHAN] * len(EVERY_TYPE)
