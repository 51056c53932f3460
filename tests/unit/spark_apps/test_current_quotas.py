"""Current-quota recomputation: detection on tiny local DataFrames, identifiers, options and report shape."""

from __future__ import annotations

import uuid

import pytest

from mailserver.model.address import Username
from mailserver.model.quota import QuotaRoot
from spark_apps.common.bookkeeping import SliceResult
from spark_apps.common.procedure import Detection, ProcedureRunner
from spark_apps.jobs.recompute_current_quotas import (
    OUTDATED,
    RecomputeCurrentQuotas,
    current_quota_inconsistencies,
    message_sizes,
    quota_identifier,
)

BOB, ALICE, CAROL = "bob@example.com", "alice@example.org", "carol"
STORED_SCHEMA = "identifier string, quotacomponent string, quotatype string, currentvalue long"


def mbx() -> str:
    return str(uuid.uuid1())


@pytest.mark.parametrize("user", [BOB, ALICE, CAROL])
def test_identifier_is_the_servers_quota_root_as_string(user):
    assert quota_identifier(user) == QuotaRoot.for_user(Username.of(user)).as_string()


def test_identifier_of_a_virtual_hosted_user_carries_the_domain_twice_as_james_stores_it():
    assert quota_identifier(BOB) == "#private&bob@example.com@example.com"
    assert quota_identifier(CAROL) == "#private&carol"
    assert quota_identifier("bob@bad_domain!") is None and quota_identifier(None) is None


@pytest.mark.spark
def test_sizes_come_from_message_v3_when_the_projection_row_lacks_them(spark):
    box = mbx()
    rows = spark.createDataFrame([(box, "m1", 100), (box, "m2", None), (box, "m3", None)],
                                 "mailboxid string, messageid string, fullcontentoctets long")
    v3 = spark.createDataFrame([("m2", 250), ("m1", 999)], "messageid string, fullcontentoctets long")
    assert sorted(r["size"] for r in message_sizes(rows, v3).collect()) == [0, 100, 250]


def detect(spark, users, mailboxes, sizes, stored):
    found = current_quota_inconsistencies(
        spark.createDataFrame([(u,) for u in users], "user string"),
        spark.createDataFrame(mailboxes, "user string, mailboxid string"),
        spark.createDataFrame(sizes, "mailboxid string, size long"),
        spark.createDataFrame(stored, STORED_SCHEMA))
    return sorted((r["kind"], r["user"], r["identifier"]) for r in found.collect())


def stored_rows(user, count, size, component="MAILBOX"):
    return [(quota_identifier(user), component, "count", count), (quota_identifier(user), component, "size", size)]


@pytest.mark.spark
def test_right_quotas_yield_nothing(spark):
    inbox, sent, alice_inbox = mbx(), mbx(), mbx()
    mailboxes = [(BOB, inbox), (BOB, sent), (ALICE, alice_inbox)]
    sizes = [(inbox, 10), (inbox, 20), (sent, 5), (alice_inbox, 7)]
    stored = stored_rows(BOB, 3, 35) + stored_rows(ALICE, 1, 7)
    assert detect(spark, [BOB, ALICE, CAROL], mailboxes, sizes, stored) == []   # carol: nothing, no rows


@pytest.mark.spark
def test_each_wrong_quota_root_is_found_once(spark):
    inbox, alice_inbox = mbx(), mbx()
    mailboxes = [(BOB, inbox), (ALICE, alice_inbox)]
    sizes = [(inbox, 10), (inbox, 20), (alice_inbox, 7)]
    stored = (stored_rows(BOB, 1, 10)           # under-counted (a failed increment)
              + stored_rows(CAROL, 2, 300))     # no message any more (a failed decrement)
    found = detect(spark, [BOB, ALICE, CAROL], mailboxes, sizes, stored)   # alice: no row at all
    assert found == sorted((OUTDATED, u, quota_identifier(u)) for u in (BOB, ALICE, CAROL))


@pytest.mark.spark
def test_only_the_size_being_wrong_is_enough(spark):
    inbox = mbx()
    found = detect(spark, [BOB], [(BOB, inbox)], [(inbox, 10)], stored_rows(BOB, 1, 11))
    assert found == [(OUTDATED, BOB, quota_identifier(BOB))]


@pytest.mark.spark
def test_other_components_and_users_out_of_scope_are_left_alone(spark):
    inbox = mbx()
    stored = [*stored_rows(BOB, 1, 10), (BOB, "SIEVE", "size", 500), *stored_rows(ALICE, 9, 9)]
    assert detect(spark, [BOB], [(BOB, inbox)], [(inbox, 10)], stored) == []


def parse(argv):
    return ProcedureRunner(RecomputeCurrentQuotas()).parse(argv)


@pytest.mark.parametrize("component", ["SIEVE", "JMAP_UPLOADS"])
def test_components_this_server_does_not_store_are_refused_with_the_reason(component, capsys):
    with pytest.raises(SystemExit) as exit_:
        parse(["--quota-component", "MAILBOX", "--quota-component", component])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert component in err and "stores no" in err and "Only MAILBOX" in err


def test_unknown_component_and_bad_user_are_refused(capsys):
    with pytest.raises(SystemExit):
        parse(["--quota-component", "DISK"])
    with pytest.raises(SystemExit):
        parse(["--user", "bob@bad_domain!"])
    assert "not a valid username" in capsys.readouterr().err


def test_running_options_follow_james():
    _, _, _, options = parse(["--rate", "5", "--user", "Bob@Example.com"])
    assert options == {"usersPerSecond": 5.0, "quotaComponents": ["MAILBOX"], "user": BOB}


def test_report_counts_failed_roots_by_username_in_both_legacy_and_per_component_fields():
    procedure = RecomputeCurrentQuotas()
    result = SliceResult(counters={"recomputedQuotaRoots": 3},
                         failures=[{"user": BOB, "identifier": "x", "error": "boom"}])
    fields = procedure.report_fields(Detection(None, {"scannedQuotaRoots": 10}), result)
    assert fields == {"processedQuotaRoots": 9, "failedQuotaRoots": [BOB], "recomputedQuotaRoots": 3,
                      "recomputeSingleQuotaComponentResults": [
                          {"quotaComponent": "MAILBOX", "processedQuotaRoots": 9, "failedQuotaRoots": [BOB]}]}
