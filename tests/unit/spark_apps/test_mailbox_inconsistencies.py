"""Detection of mailbox inconsistencies on tiny local DataFrames shaped as the connector reads them."""

from __future__ import annotations

import uuid

import pytest

from spark_apps.jobs.solve_mailbox_inconsistencies import (
    GHOST_CONFLICT,
    ITEM_COLUMNS,
    ORPHAN_MAILBOX,
    ORPHAN_PATH,
    SAME_ID_CONFLICT,
    combine_passes,
    conflicting_entry,
    mailbox_inconsistencies,
    parse_path,
    winning_path,
)

pytestmark = pytest.mark.spark

MAILBOX_SCHEMA = "id string, mailboxbase struct<namespace: string, user: string>, name string, uidvalidity long"
PATH_SCHEMA = "namespace string, user string, mailboxname string, mailboxid string, uidvalidity long"
NS, BOB, ALICE = "#private", "bob@example.com", "alice@example.com"


def ids(n: int) -> list[str]:
    return [str(uuid.uuid1()) for _ in range(n)]


def row(mailbox_id: str, name: str, user: str = BOB):
    return (mailbox_id, (NS, user), name, 42)


def path(mailbox_id: str, name: str, user: str = BOB):
    return (NS, user, name, mailbox_id, 42)


def detect(spark, rows, paths) -> dict[str, dict]:
    found = mailbox_inconsistencies(spark.createDataFrame(rows, MAILBOX_SCHEMA),
                                    spark.createDataFrame(paths, PATH_SCHEMA))
    assert tuple(found.columns) == ITEM_COLUMNS
    items = [r.asDict(recursive=True) for r in found.collect()]
    assert all(v is not None for item in items for v in item.values()), "item columns must never be null"
    by_id = {item["mailboxid"]: item for item in items}
    assert len(by_id) == len(items), "one item per mailbox id, so two fixes never race on one mailbox"
    return by_id


def test_consistent_tables_yield_nothing(spark):
    a, b, c = ids(3)
    rows = [row(a, "INBOX"), row(b, "Sent"), row(c, "INBOX", user=ALICE)]
    paths = [path(a, "INBOX"), path(b, "Sent"), path(c, "INBOX", user=ALICE)]
    assert detect(spark, rows, paths) == {}


def test_a_row_without_any_path_entry_on_a_free_path_is_an_orphan_mailbox_entry(spark):
    a, b = ids(2)
    found = detect(spark, [row(a, "INBOX"), row(b, "Lost")], [path(a, "INBOX")])
    assert found == {b: {"kind": ORPHAN_MAILBOX, "mailboxid": b, "namespace": NS, "user": BOB,
                         "mailboxname": "Lost", "paths": [], "conflictmailboxid": ""}}


def test_path_entries_without_a_row_are_one_orphan_path_item_listing_every_entry(spark):
    a, b = ids(2)
    found = detect(spark, [row(a, "INBOX")], [path(a, "INBOX"), path(b, "Two"), path(b, "One")])
    assert found == {b: {"kind": ORPHAN_PATH, "mailboxid": b, "namespace": "", "user": "", "mailboxname": "",
                         "paths": [f"{NS}:{BOB}:One", f"{NS}:{BOB}:Two"], "conflictmailboxid": ""}}


def test_an_unfinished_rename_is_a_same_id_conflict_whichever_write_was_lost(spark):
    row_write_lost, old_path_delete_lost = ids(2)
    rows = [row(row_write_lost, "Before"), row(old_path_delete_lost, "After")]
    paths = [path(row_write_lost, "Before"), path(row_write_lost, "After"),
             path(old_path_delete_lost, "Old"), path(old_path_delete_lost, "After", user=ALICE)]
    found = detect(spark, rows, paths)
    assert {k: (v["kind"], v["mailboxname"], v["paths"]) for k, v in found.items()} == {
        row_write_lost: (SAME_ID_CONFLICT, "Before", [f"{NS}:{BOB}:After", f"{NS}:{BOB}:Before"]),
        old_path_delete_lost: (SAME_ID_CONFLICT, "After", [f"{NS}:{ALICE}:After", f"{NS}:{BOB}:Old"]),
    }


def test_a_stale_row_is_a_same_id_conflict_not_an_orphan_even_when_its_path_is_free_or_taken(spark):
    free, taken, holder = ids(3)
    rows = [row(free, "Gone"), row(taken, "Busy"), row(holder, "Busy")]
    paths = [path(free, "Moved"), path(taken, "Elsewhere"), path(holder, "Busy")]
    found = detect(spark, rows, paths)
    assert {k: (v["kind"], v["paths"], v["conflictmailboxid"]) for k, v in found.items()} == {
        free: (SAME_ID_CONFLICT, [f"{NS}:{BOB}:Moved"], ""),
        taken: (SAME_ID_CONFLICT, [f"{NS}:{BOB}:Elsewhere"], ""),
    }


def test_a_row_whose_path_belongs_to_another_id_and_nothing_points_to_it_is_a_ghost(spark):
    ghost, live = ids(2)
    found = detect(spark, [row(ghost, "INBOX"), row(live, "INBOX")], [path(live, "INBOX")])
    assert found == {ghost: {"kind": GHOST_CONFLICT, "mailboxid": ghost, "namespace": NS, "user": BOB,
                             "mailboxname": "INBOX", "paths": [], "conflictmailboxid": live}}
    assert conflicting_entry(found[ghost]) == {
        "mailboxDaoEntry": {"mailboxPath": f"{NS}:{BOB}:INBOX", "mailboxId": ghost},
        "mailboxPathDaoEntry": {"mailboxPath": f"{NS}:{BOB}:INBOX", "mailboxId": live}}


def test_every_kind_at_once_and_the_items_survive_a_join_on_all_their_columns(spark):
    # The framework finds "unresolved" items by joining before/after on every item column.
    ok, orphan_row, orphan_path, renamed, ghost = ids(5)
    rows = [row(ok, "INBOX"), row(orphan_row, "A"), row(renamed, "B"), row(ghost, "INBOX")]
    paths = [path(ok, "INBOX"), path(orphan_path, "C"), path(renamed, "B"), path(renamed, "B2")]
    found = mailbox_inconsistencies(spark.createDataFrame(rows, MAILBOX_SCHEMA),
                                    spark.createDataFrame(paths, PATH_SCHEMA))
    kinds = {r.mailboxid: r.kind for r in found.collect()}
    assert kinds == {orphan_row: ORPHAN_MAILBOX, orphan_path: ORPHAN_PATH, renamed: SAME_ID_CONFLICT,
                     ghost: GHOST_CONFLICT}
    assert found.join(found, list(ITEM_COLUMNS), "left_semi").count() == 4


def test_the_newest_entry_wins_and_the_rows_own_path_wins_a_tie():
    assert winning_path("p:u:old", {"p:u:old": 10, "p:u:new": 20}) == "p:u:new"
    assert winning_path("p:u:row", {"p:u:row": 20, "p:u:other": 20}) == "p:u:row"
    assert winning_path("p:u:absent", {"p:u:b": 5, "p:u:a": 5}) == "p:u:a"   # deterministic without the row
    assert winning_path(None, {"p:u:only": 1}) == "p:u:only"


def test_a_name_may_contain_the_separator():
    assert parse_path("#private:bob@example.com:a:b:c") == ("#private", "bob@example.com", "a:b:c")


def test_passes_accumulate_like_james_iterations_and_an_error_in_any_pass_makes_it_partial():
    first = {"type": "t", "timestamp": "t1", "runKey": "k", "detected": {"sameIdConflict": 2},
             "processedMailboxEntries": 3, "processedMailboxPathEntries": 4, "fixedInconsistencies": [{"a": 1}],
             "errors": [{"e": 1}], "conflictingEntries": [], "remaining": {"x": 1}, "outcome": "PARTIAL",
             "durationSeconds": 1.0}
    second = {**first, "timestamp": "t2", "runKey": "k/pass-2", "detected": {"x": 1}, "errors": [],
              "fixedInconsistencies": [{"b": 2}], "remaining": {}, "outcome": "COMPLETED"}
    combined = combine_passes([first, second])
    assert combined["detected"] == {"sameIdConflict": 2} and combined["remaining"] == {}
    assert combined["processedMailboxEntries"] == 6 and combined["fixedInconsistencies"] == [{"a": 1}, {"b": 2}]
    assert combined["outcome"] == "PARTIAL" and combined["iterations"] == 2 and combined["runKey"] == "k"
    assert combine_passes([{**second, "errors": []}])["outcome"] == "COMPLETED"


@pytest.mark.parametrize(("argv", "message"), [
    (["--auto-merge"], "--auto-merge is not supported"),
    (["--max-iterations", "0"], "--max-iterations must be at least 1"),
])
def test_auto_merge_and_a_zero_iteration_count_are_refused_before_anything_runs(argv, message, capsys):
    from spark_apps.jobs.solve_mailbox_inconsistencies import main

    with pytest.raises(SystemExit) as exit_:
        main(["--cassandra-hosts", "192.0.2.1", *argv])   # unroutable: parsing must fail first
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
