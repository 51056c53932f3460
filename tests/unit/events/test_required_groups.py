"""Required groups as an event-sourced aggregate: changes recorded with host and date."""

from __future__ import annotations

from mailserver.events.required_groups import ADDED, REMOVED, RequiredGroups, RequireGroups
from mailserver.eventsourcing.memory import MemoryEventStore

QUOTA = "org.apache.james.mailbox.store.quota.ListeningCurrentQuotaUpdater$ListeningCurrentQuotaUpdaterGroup"
FAST_VIEW = ("org.apache.james.jmap.event.ComputeMessageFastViewProjectionListener"
             "$ComputeMessageFastViewProjectionListenerGroup")


def test_first_start_adds_every_group_with_host_and_date():
    groups = RequiredGroups(MemoryEventStore())

    changes = groups.require(RequireGroups.of([QUOTA, FAST_VIEW], host="node-1"))

    assert sorted((c.type, c.group, c.host) for c in changes) == [(ADDED, FAST_VIEW, "node-1"),
                                                                  (ADDED, QUOTA, "node-1")]
    assert all(c.date.endswith("Z") for c in changes)
    assert groups.current() == {QUOTA, FAST_VIEW}


def test_the_same_groups_again_change_nothing():
    groups = RequiredGroups(MemoryEventStore())
    groups.require(RequireGroups.of([QUOTA], host="node-1"))

    assert groups.require(RequireGroups.of([QUOTA], host="node-2")) == []
    assert len(groups.audit()) == 1


def test_a_group_left_out_is_removed_and_the_audit_keeps_both_changes():
    groups = RequiredGroups(MemoryEventStore())
    groups.require(RequireGroups.of([QUOTA, FAST_VIEW], host="node-1"))

    changes = groups.require(RequireGroups.of([QUOTA], host="node-2"))

    assert [(c.type, c.group, c.host) for c in changes] == [(REMOVED, FAST_VIEW, "node-2")]
    assert groups.current() == {QUOTA}
    assert [(c.type, c.group, c.host) for c in groups.audit()] == [
        (ADDED, FAST_VIEW, "node-1"), (ADDED, QUOTA, "node-1"), (REMOVED, FAST_VIEW, "node-2")]
