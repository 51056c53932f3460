"""Task services from settings: the manager, an idle worker, the built-in types that can be built."""

from __future__ import annotations

from mailserver.queue.memory import MemoryMailQueueFactory
from mailserver.repository.memory import MemoryMailRepositoryStore
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.tasks.wiring import TaskSettings, build


def test_settings_from_env():
    settings = TaskSettings.from_env({"MAILSERVER_NODE_NAME": "james-3", "MAILSERVER_TASKS_HEARTBEAT_TIMEOUT": "90",
                                      "MAILSERVER_TASKS_PARALLELISM": "2"})
    assert (settings.node, settings.heartbeat_timeout, settings.parallelism, settings.poll_interval) == \
        ("james-3", 90.0, 2, 1.0)
    assert TaskSettings.from_env({}).node   # the host name


def test_build_registers_what_the_node_can_run():
    settings = TaskSettings("n")
    queues_only = build(MemoryTaskStore(), settings, queues=MemoryMailQueueFactory())
    assert queues_only.registry.types() == ["browse-start-update", "clear-mail-queue", "delete-mails-from-mail-queue",
                                            "republish-not-processed-mails", "tasks-cleanup"]
    both = build(MemoryTaskStore(), settings, queues=MemoryMailQueueFactory(),
                 repositories=MemoryMailRepositoryStore())
    assert {"clear-mail-repository", "reprocessing-all", "reprocessing-one"} <= set(both.registry.types())
    assert both.manager.node == both.worker.node == "n"
    assert both.worker.running_ids() == set()


def test_a_node_with_the_mailboxes_runs_the_mailbox_tasks():
    from mailserver.blob.memory import MemoryBlobStore
    from mailserver.mailbox.subscriptions import MemorySubscriptionStore
    from mailserver.mailbox.wiring import memory_context

    manager = memory_context(MemoryBlobStore()).manager
    without_subscriptions = build(MemoryTaskStore(), TaskSettings("n"), mailboxes=manager)
    assert "ClearMailboxContentTask" in without_subscriptions.registry.types()
    assert "SubscribeAllTask" not in without_subscriptions.registry.types()
    both = build(MemoryTaskStore(), TaskSettings("n"), mailboxes=manager, subscriptions=MemorySubscriptionStore())
    rebuilt = both.registry.create("ClearMailboxContentTask", {"username": "bob@d.test", "mailboxName": "INBOX"})
    assert rebuilt.parameters() == {"username": "bob@d.test", "mailboxName": "INBOX"}
    assert both.registry.create("SubscribeAllTask", {"username": "bob@d.test"}).parameters() == {
        "username": "bob@d.test"}
