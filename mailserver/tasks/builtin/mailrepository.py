"""Mail-repository tasks (James's ``clear-mail-repository``, ``reprocessing-all``,
``reprocessing-one``), with their ``additionalInformation`` wire names.

Tasks carry the repository URL (``cassandra://var/mail/error/``) so any node selects the same
repository; reports show James's ``repositoryPath`` (``var/mail/error/``). Reprocessing goes
through ``mailserver.mailets.reprocess``: the mail is enqueued in the target queue (default
``spool``) in its stored state or ``targetProcessor``, then removed from the repository.
"""

from __future__ import annotations

import threading
from itertools import islice
from typing import Any

from mailserver.mailets.reprocess import reprocess
from mailserver.queue.api import SPOOL, MailQueueFactory
from mailserver.repository.api import MailRepositoryStore
from mailserver.tasks.api import Result, Task
from mailserver.tasks.registry import TaskRegistry


def repository_path(url: str) -> str:
    """``cassandra://var/mail/error/`` -> ``var/mail/error/`` (James's MailRepositoryPath)."""
    return url.split("://", 1)[1] if "://" in url else url


class ClearMailRepositoryTask(Task):
    type = "clear-mail-repository"

    def __init__(self, repositories: MailRepositoryStore, url: str) -> None:
        self.repositories = repositories
        self.url = url
        self._initial: int | None = None

    def run(self) -> Result:
        repository = self.repositories.select(self.url)
        self._initial = repository.size()
        for key in list(repository.list_keys()):
            if self.cancel_requested:
                break
            repository.remove(key)
        return Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"url": self.url}

    def additional_information(self) -> dict[str, Any]:
        remaining = self.repositories.select(self.url).size()
        return {"repositoryPath": repository_path(self.url),
                "initialCount": remaining if self._initial is None else self._initial,
                "remainingCount": remaining}


class ReprocessingAllMailsTask(Task):
    type = "reprocessing-all"

    def __init__(self, repositories: MailRepositoryStore, queues: MailQueueFactory, url: str,
                 target_queue: str = SPOOL, target_processor: str | None = None, limit: int | None = None) -> None:
        self.repositories = repositories
        self.queues = queues
        self.url = url
        self.target_queue = target_queue
        self.target_processor = target_processor
        self.limit = limit
        self._initial: int | None = None
        self._processed = 0
        self._lock = threading.Lock()

    def run(self) -> Result:
        repository = self.repositories.select(self.url)
        queue = self.queues.get(self.target_queue)
        keys = list(islice(repository.list_keys(), self.limit))
        self._initial = repository.size()
        for key in keys:
            if self.cancel_requested:
                break
            if reprocess(repository, key, self.target_processor, queue) is not None:
                with self._lock:
                    self._processed += 1
        return Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"url": self.url, "targetQueue": self.target_queue, "targetProcessor": self.target_processor,
                "limit": self.limit}

    def additional_information(self) -> dict[str, Any]:
        with self._lock:
            processed = self._processed
        initial = self._initial if self._initial is not None else self.repositories.select(self.url).size()
        return {"repositoryPath": repository_path(self.url), "targetQueue": self.target_queue,
                "targetProcessor": self.target_processor, "consume": True, "limit": self.limit,
                "maxRetries": None, "forRecipient": None,
                "initialCount": initial, "remainingCount": initial - processed}


class ReprocessingOneMailTask(Task):
    type = "reprocessing-one"

    def __init__(self, repositories: MailRepositoryStore, queues: MailQueueFactory, url: str, key: str,
                 target_queue: str = SPOOL, target_processor: str | None = None) -> None:
        self.repositories = repositories
        self.queues = queues
        self.url = url
        self.key = key
        self.target_queue = target_queue
        self.target_processor = target_processor

    def run(self) -> Result:
        # An unknown key is nothing to do (James completes too).
        reprocess(self.repositories.select(self.url), self.key, self.target_processor,
                  self.queues.get(self.target_queue))
        return Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"url": self.url, "mailKey": self.key, "targetQueue": self.target_queue,
                "targetProcessor": self.target_processor}

    def additional_information(self) -> dict[str, Any]:
        return {"repositoryPath": repository_path(self.url), "targetQueue": self.target_queue,
                "targetProcessor": self.target_processor, "consume": True, "forRecipient": None,
                "mailKey": self.key}


def register(registry: TaskRegistry, repositories: MailRepositoryStore, queues: MailQueueFactory | None) -> None:
    registry.register(ClearMailRepositoryTask.type, lambda p: ClearMailRepositoryTask(repositories, p["url"]))
    if queues is None:
        return   # reprocessing needs the queues
    registry.register(ReprocessingAllMailsTask.type, lambda p: ReprocessingAllMailsTask(
        repositories, queues, p["url"], p["targetQueue"], p["targetProcessor"], p["limit"]))
    registry.register(ReprocessingOneMailTask.type, lambda p: ReprocessingOneMailTask(
        repositories, queues, p["url"], p["mailKey"], p["targetQueue"], p["targetProcessor"]))
