"""Mailbox/set (RFC 8621 2.5) over the memory mailbox layer, through the HTTP application: RFC 8621
2.6's example and each refusal James answers."""

from __future__ import annotations

from typing import Any

import pytest

from mailserver.jmap.capabilities import CoreLimits
from mailserver.model.mailbox import MailboxPath
from tests.support.jmap_world import OTHER, JmapClient, World, mailbox_id, plain


class Jmap(JmapClient):
    def set(self, **arguments: Any) -> dict[str, Any]:
        return self.call("Mailbox/set", **arguments)


@pytest.fixture
def jmap(world: World) -> Jmap:
    return Jmap(world)


def names(world: World) -> set[str]:
    return {m.path.name for m in world.mailbox.manager.list_mailboxes(world.user)}


def test_rfc_example_creates_a_mailbox_and_a_child_by_creation_id(jmap, world):
    answer = jmap.set(create={"k1": {"name": "Lists"}, "k2": {"name": "jmap", "parentId": "#k1",
                                                               "isSubscribed": False}})
    assert answer["oldState"] != answer["newState"]
    created = answer["created"]
    assert created["k1"]["id"] == mailbox_id(world, "Lists")
    assert created["k1"]["isSubscribed"] is True and "isSubscribed" not in created["k2"]
    assert created["k2"] | {"id": ""} == {"id": "", "sortOrder": 1000, "role": None, "totalEmails": 0,
                                          "unreadEmails": 0, "totalThreads": 0, "unreadThreads": 0,
                                          "myRights": created["k1"]["myRights"]}
    assert {"Lists", "Lists.jmap"} <= names(world)
    assert "Lists" in world.subscriptions.subscriptions(world.user)
    assert "Lists.jmap" not in world.subscriptions.subscriptions(world.user)


@pytest.mark.parametrize("request_, error, properties", [
    ({"name": "Projects"}, "invalidArguments", ["name"]),
    ({"name": "a.b"}, "invalidArguments", ["name"]),
    ({"name": ""}, "invalidArguments", ["name"]),
    ({"name": "x", "parentId": "missing"}, "invalidArguments", ["parentId"]),
    ({"name": "x", "role": "sent"}, "invalidArguments", ["role"]),
    ({"name": "x", "color": "red"}, "invalidArguments", ["color"]),
    ({"name": "x", "isSubscribed": "yes"}, "invalidArguments", ["isSubscribed"]),
])
def test_create_refusals(jmap, world, request_, error, properties):
    before = names(world)
    refused = jmap.set(create={"c": request_})["notCreated"]["c"]
    assert (refused["type"], refused.get("properties")) == (error, properties), refused
    assert names(world) == before


def test_update_renames_moves_with_children_and_subscriptions(jmap, world):
    world.subscriptions.subscribe(world.user, "Projects.2026")
    projects, archive = mailbox_id(world, "Projects"), mailbox_id(world, "Archive")
    answer = jmap.set(update={projects: {"name": "Work", "parentId": archive}})
    assert answer["updated"] == {projects: {}}
    assert {"Archive.Work", "Archive.Work.2026"} <= names(world) and "Projects" not in names(world)
    assert world.subscriptions.subscriptions(world.user).count("Archive.Work.2026") == 1
    assert jmap.set(update={projects: {"parentId": None, "isSubscribed": True}})["updated"] == {projects: {}}
    assert "Work" in names(world) and "Work" in world.subscriptions.subscriptions(world.user)
    jmap.set(update={projects: {"isSubscribed": False}})
    assert "Work" not in world.subscriptions.subscriptions(world.user)


@pytest.mark.parametrize("target, patch, error, properties", [
    ("Sent", {"name": "Sent2"}, "invalidArguments", ["name"]),
    ("INBOX", {"parentId": "Projects"}, "invalidArguments", ["parentId"]),
    ("Projects", {"role": "sent"}, "invalidArguments", ["role"]),
    ("Projects", {"sortOrder": 3}, "invalidArguments", ["sortOrder"]),
    ("Projects", {"color": 3}, "invalidArguments", ["color"]),
    ("Projects", {"name": "Sent"}, "invalidArguments", ["name"]),
    ("Projects", {"parentId": "Projects.2026"}, "invalidArguments", ["parentId"]),
    ("Projects", {"parentId": "Projects"}, "invalidArguments", ["parentId"]),
    ("Projects", {"parentId": "missing"}, "notFound", None),
    ("missing", {"name": "x"}, "notFound", None),
])
def test_update_refusals(jmap, world, target, patch, error, properties):
    ids = {n: mailbox_id(world, n) for n in names(world)}
    patch = {k: ids.get(v, v) if k == "parentId" else v for k, v in patch.items()}
    before = names(world)
    key = ids.get(target, target)
    refused = jmap.set(update={key: patch})["notUpdated"][key]
    assert (refused["type"], refused.get("properties")) == (error, properties), refused
    assert names(world) == before


def test_destroy_refusals_and_on_destroy_remove_emails(jmap, world):
    world.deliver(plain("kept"), mailbox="Projects.2026")
    ids = {n: mailbox_id(world, n) for n in ("Projects", "Projects.2026", "Trash")}
    answer = jmap.set(destroy=[ids["Projects"], ids["Projects.2026"], ids["Trash"], "missing"])
    assert {k: v["type"] for k, v in answer["notDestroyed"].items()} == {
        ids["Projects"]: "mailboxHasChild", ids["Projects.2026"]: "mailboxHasEmail",
        ids["Trash"]: "invalidArguments", "missing": "notFound"}
    assert answer["destroyed"] is None
    world.subscriptions.subscribe(world.user, "Projects.2026")
    answer = jmap.set(destroy=[ids["Projects.2026"], ids["Projects"]], onDestroyRemoveEmails=True)
    assert answer["destroyed"] == [ids["Projects.2026"], ids["Projects"]]
    assert "Projects" not in names(world)
    assert "Projects.2026" not in world.subscriptions.subscriptions(world.user)


def test_method_level_refusals(world):
    jmap = Jmap(world, CoreLimits(max_objects_in_set=1))
    for arguments, error in (({"ifInState": "stale"}, "stateMismatch"),
                             ({"destroy": ["a", "b"]}, "requestTooLarge"),
                             ({"destroy": "a"}, "invalidArguments"),
                             ({"onDestroyRemoveEmails": "yes"}, "invalidArguments"),
                             ({"colour": 1}, "invalidArguments")):
        name, answer, _ = jmap.calls(["Mailbox/set", {"accountId": world.account, **arguments}, "c1"])[0]
        assert (name, answer["type"]) == ("error", error)


def test_another_users_mailbox_is_not_found(jmap, world):
    bobs = str(world.mailbox.manager.get_mailbox(MailboxPath.of(OTHER, "INBOX")).id)
    answer = jmap.set(update={bobs: {"name": "x"}}, destroy=[bobs])
    assert answer["notUpdated"][bobs]["type"] == "notFound" and answer["notDestroyed"][bobs]["type"] == "notFound"
