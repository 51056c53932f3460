"""Group reconciliation's pure parts: the plan from the broker's state, what may be moved, outcome, report."""

from __future__ import annotations

import pytest
from mailplatform.event_bus import (
    COMPLETED,
    DRY_RUN,
    PARTIAL,
    Actions,
    EmptyRequiredGroups,
    GroupsPlan,
    Orphan,
    build_report,
    check_not_blind,
    outcome_of,
    plan_of,
    why_not_move,
)

from mailserver.events.registered_groups import GroupQueue, GroupsState

A, B, C, D = (f"org.apache.james.test.{x}Listener${x}Group" for x in "ABCD")


def queue(group: str) -> str:
    return f"mailboxEvent-workQueue-{group}"


def state() -> GroupsState:
    """Required A, B; A and C bound; queues of A, C (3 messages, stale stats) and D (unbound, 1 consumer)."""
    return GroupsState(frozenset({A, B}), frozenset({A, C}),
                       (GroupQueue(A, 0, 1), GroupQueue(C, 0, 0), GroupQueue(D, 2, 1)))


def test_plan_of_the_state_with_exact_depths_over_management_statistics():
    plan = plan_of(state(), {queue(C): (3, 0)})
    assert (plan.required, plan.registered, plan.missing, plan.unexpected) == ([A, B], [A, C], [B], [C])
    assert plan.orphans == [Orphan(C, queue(C), 3, 0), Orphan(D, queue(D), 2, 1)]
    assert plan.counts() == {"missingGroups": 1, "unexpectedGroups": 1, "orphanQueues": 2, "orphanMessages": 5}
    assert GroupsPlan.from_dict(plan.as_dict()) == plan and not plan.converged


def test_a_queue_with_consumers_is_not_emptied():
    assert why_not_move(Orphan(C, queue(C), 3, 0)) is None
    assert "a node still runs" in why_not_move(Orphan(D, queue(D), 2, 1))


def test_acting_on_an_empty_aggregate_is_refused():
    blind = plan_of(GroupsState(frozenset(), frozenset({A, C}), ()))
    with pytest.raises(EmptyRequiredGroups, match="aggregate is empty but 2 group"):
        check_not_blind(blind)
    check_not_blind(plan_of(GroupsState(frozenset(), frozenset(), ())))   # nothing bound: nothing to fear
    check_not_blind(plan_of(state()))


def test_outcome():
    clean = plan_of(GroupsState(frozenset({A, B}), frozenset({A, B}), (GroupQueue(A, 0, 1), GroupQueue(B, 0, 1))))
    left = plan_of(GroupsState(frozenset({A}), frozenset({A}), (GroupQueue(A, 0, 1), GroupQueue(C, 3, 0))))
    assert outcome_of(True, False, left, Actions()) == (DRY_RUN, [])
    assert outcome_of(False, False, clean, Actions()) == (COMPLETED, [])
    assert outcome_of(False, False, left, Actions()) == (COMPLETED, [])          # orphans only reported, as asked
    assert outcome_of(False, True, left, Actions()) == (
        PARTIAL, [f"orphan queue {queue(C)} still holds 3 message(s)"])
    kept = Actions(kept=[{"queue": queue(D), "reason": "1 consumer(s)"}])
    assert outcome_of(False, True, clean, kept) == (PARTIAL, [f"orphan queue {queue(D)} kept: 1 consumer(s)"])
    still = plan_of(GroupsState(frozenset({A, B}), frozenset({A, C}), ()))
    assert outcome_of(False, False, still, Actions())[1] == [
        f"group {C} is still bound though not required", f"required group {B} is still not bound"]


def test_report_says_what_was_found_done_and_left():
    before = plan_of(state(), {queue(C): (3, 0)})
    after = plan_of(GroupsState(frozenset({A, B}), frozenset({A, B}),
                                (GroupQueue(A, 0, 1), GroupQueue(B, 0, 0), GroupQueue(D, 2, 1))))
    actions = Actions(bound=[B], unbound=[C], moved={C: 3}, deleted_queues=[queue(C)],
                      kept=[{"group": D, "queue": queue(D), "messages": 2, "consumers": 1, "reason": "consumers"}])
    report = build_report(run_key="dag/run", dry_run=False, move=True, rate=10.0, before=before, actions=actions,
                          after=after, audit=[{"type": "RequiredGroupAdded", "group": A, "host": "n1", "date": "d"}])
    assert report["type"] == "reconcile-event-bus-groups" and report["outcome"] == PARTIAL
    assert (report["missing"], report["unexpected"]) == ([B], [C])
    assert report["orphans"][0] == {"group": C, "queue": queue(C), "messages": 3, "consumers": 0}
    assert (report["bound"], report["unbound"], report["movedToDeadLetters"], report["deletedQueues"]) == (
        [B], [C], {C: 3}, [queue(C)])
    assert report["detected"]["orphanMessages"] == 5 and report["remaining"]["orphanQueues"] == 1
    assert report["runningOptions"] == {"moveOrphanMessagesToDeadLetters": True, "messagesPerSecond": 10.0}
    assert len(report["problems"]) == 2 and report["requiredGroupsAudit"][0]["host"] == "n1"
