"""Plug search into a mailbox layer: the index adapter and the indexing group listener on its bus.

As the mailbox wiring says of group listeners: register on ``context.bus`` before a RabbitMQ bus
starts consuming (the ``listeners`` role starts after the backends).
"""

from __future__ import annotations

import logging

from mailserver.mailbox.wiring import MailboxContext
from mailserver.search.api import SearchIndex, SearchIndexError
from mailserver.search.config import DEFAULT_DOCUMENT_OPTIONS, DocumentOptions, SearchConfig
from mailserver.search.group_commit import GroupCommitSearchIndex
from mailserver.search.listener import OpenSearchListeningMessageSearchIndex
from mailserver.search.memory import MemorySearchIndex

log = logging.getLogger(__name__)
OTHER_CLIENT_THREADS = 22   # beside the listener threads: IMAP SEARCH and WebAdmin requests at once


def register_search(context: MailboxContext, index: SearchIndex,
                    options: DocumentOptions = DEFAULT_DOCUMENT_OPTIONS) -> OpenSearchListeningMessageSearchIndex:
    listener = OpenSearchListeningMessageSearchIndex(index, context.manager, options)
    context.bus.register(listener)
    return listener


def memory_search(context: MailboxContext) -> MemorySearchIndex:
    """A memory index fed by the indexing listener of ``context`` (unit tests, the memory context)."""
    index = MemorySearchIndex()
    register_search(context, index)
    return index


def opensearch_search(context: MailboxContext, config: SearchConfig, *, threads: int = 10) -> SearchIndex:
    """The OpenSearch index of ``config`` (index and aliases ensured now if OpenSearch answers, else at
    the first write) with the indexing listener registered on ``context.bus``; ``threads``: how many
    listener threads may index at once (the client's connection pool is sized from it)."""
    from mailserver.search.index import make_client
    from mailserver.search.opensearch import OpenSearchSearchIndex

    index = OpenSearchSearchIndex(make_client(config, connections=threads + OTHER_CLIENT_THREADS), config)
    try:
        index.ensure()
    except SearchIndexError as error:   # search is off the mail path: start anyway, indexing retries
        log.warning("search index not ensured at start (%s); the indexing listener will retry", error)
    # The listener's threads write through one group commit: concurrent Added events share a bulk request.
    register_search(context, GroupCommitSearchIndex(index), config.documents)
    return index
