"""The search port: a query model covering James's ``SearchQuery`` essentials, and the index operations.

A query is a conjunction of criteria over one or several mailboxes (the caller resolves which
mailboxes a user may search, as James's ``MessageSearchIndex.search(session, mailboxIds, ...)``),
sorted and limited. Nested criteria (``all_of``, ``any_of``, ``none_of``: James's ``and``, ``or``
and ``not`` criteria) are queries made with ``SearchQuery.criteria``, whose scope, sort and limit
are the outer query's. Text criteria follow James's OpenSearch queries: ``subject`` and ``body`` match
every word (operator AND), an address criterion matches a display-name word, the local part or the
domain of an address, or the whole address. Dates have second resolution, as the indexed ones.

Writes take documents built by ``mailserver.search.document.message_document``: every adapter
indexes the same JSON, and the memory adapter searches it the way the OpenSearch one does.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from mailserver.model.flags import Flags, SystemFlag
from mailserver.model.ids import MailboxId, MessageId
from mailserver.search.mapping import MAILBOX_ID, MESSAGE_ID, UID

DEFAULT_LIMIT = 100     # OpenSearchSearcher.DEFAULT_SEARCH_SIZE
MAX_LIMIT = 10_000      # OpenSearch's index.max_result_window
# SearchHighlighterConfiguration.DEFAULT: the tags around a matched word, a fragment's length
HIGHLIGHT_PRE, HIGHLIGHT_POST = "<mark>", "</mark>"
FRAGMENT_SIZE = 100


class SearchIndexError(Exception):
    """The index could not be written or read (unreachable, refused documents): the caller retries."""


class SortClause(StrEnum):
    ARRIVAL = "arrival"     # internal date (field ``date``)
    SENT_DATE = "sentDate"  # the Date header (IMAP SORT DATE)
    SIZE = "size"
    UID = "uid"


@dataclass(frozen=True)
class Sort:
    clause: SortClause
    reverse: bool = False


DEFAULT_SORT = (Sort(SortClause.UID),)   # SearchQuery.DEFAULT_SORTS


@dataclass(frozen=True)
class SearchQuery:
    """Criteria (all must hold) over ``mailbox_ids``; an empty scope finds nothing, as in James.

    Dates: ``internal_date_from`` is inclusive, ``internal_date_before`` exclusive. Sizes:
    ``size_greater_than`` / ``size_less_than`` are strict (James's sizeGreaterThan / sizeLessThan).
    """

    mailbox_ids: tuple[MailboxId, ...]
    from_: str | None = None
    to: str | None = None
    cc: str | None = None
    bcc: str | None = None
    subject: str | None = None
    body: str | None = None
    attachment_file_name: str | None = None
    attachment_text: str | None = None   # an attachment's extracted text, or its file extension
    # (lower-cased name, value): the header field is present, and when value is given one of its
    # words is in it (James's headerExists / headerContains)
    headers: tuple[tuple[str, str | None], ...] = ()
    has_attachment: bool | None = None
    flags_set: frozenset[SystemFlag] = frozenset()
    flags_unset: frozenset[SystemFlag] = frozenset()
    user_flags_set: frozenset[str] = frozenset()
    user_flags_unset: frozenset[str] = frozenset()
    internal_date_from: datetime | None = None
    internal_date_before: datetime | None = None
    size_greater_than: int | None = None
    size_less_than: int | None = None
    uids: tuple[int, ...] | None = None
    message_id: MessageId | None = None
    all_of: tuple[SearchQuery, ...] = ()
    any_of: tuple[SearchQuery, ...] = ()    # at least one holds (an empty any_of holds for none)
    none_of: tuple[SearchQuery, ...] = ()
    sort: tuple[Sort, ...] = DEFAULT_SORT
    limit: int = DEFAULT_LIMIT

    def __post_init__(self) -> None:
        object.__setattr__(self, "mailbox_ids", tuple(dict.fromkeys(self.mailbox_ids)))
        for name in ("flags_set", "flags_unset", "user_flags_set", "user_flags_unset"):
            object.__setattr__(self, name, frozenset(getattr(self, name)))
        object.__setattr__(self, "sort", tuple(self.sort) or DEFAULT_SORT)
        if not 1 <= self.limit <= MAX_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {self.limit}")
        for name in ("size_greater_than", "size_less_than"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must not be negative")
        object.__setattr__(self, "headers", tuple((n.lower(), v) for n, v in self.headers))
        for name in ("from_", "to", "cc", "bcc", "subject", "body", "attachment_file_name", "attachment_text"):
            value = getattr(self, name)
            if value is not None and not value.strip():
                raise ValueError(f"{name.rstrip('_')} must not be blank")

    @classmethod
    def of(cls, mailbox_ids: MailboxId | Iterable[MailboxId], **criteria: Any) -> SearchQuery:
        ids = (mailbox_ids,) if isinstance(mailbox_ids, MailboxId) else tuple(mailbox_ids)
        return cls(mailbox_ids=ids, **criteria)

    @classmethod
    def criteria(cls, **criteria: Any) -> SearchQuery:
        """Criteria to nest in ``all_of``, ``any_of`` or ``none_of`` of a query."""
        return cls(mailbox_ids=(), **criteria)


@dataclass(frozen=True, order=True)
class SearchHit:
    mailbox_id: MailboxId
    uid: int
    message_id: MessageId = field(compare=False)

    @classmethod
    def of_document(cls, document: dict[str, Any]) -> SearchHit:
        return cls(MailboxId.of(document[MAILBOX_ID]), int(document[UID]), MessageId.of(document[MESSAGE_ID]))


@dataclass(frozen=True)
class Snippet:
    """A matching message's highlighted subject and body (or attachment text) fragment, each None
    when nothing in it matched (James's ``SearchSnippet``). HTML-escaped, words in ``<mark>``."""

    message_id: MessageId
    subject: str | None
    body: str | None


@dataclass(frozen=True)
class FlagsUpdate:
    uid: int
    flags: Flags
    mod_seq: int


@dataclass
class BulkReport:
    """What a batched write did: counts, and per document the reason it was refused."""

    succeeded: int = 0
    failures: dict[str, str] = field(default_factory=dict)   # document id -> reason
    skipped: dict[str, str] = field(default_factory=dict)    # document id -> the tolerated error (not_found)

    @property
    def failed(self) -> int:
        return len(self.failures)

    def raise_for_failures(self) -> None:
        if self.failures:
            first = next(iter(self.failures.items()))
            raise SearchIndexError(f"{self.failed} document(s) refused, first {first[0]}: {first[1]}")


def whole_second(value: datetime) -> datetime:
    """``value`` rounded up to a whole second, in UTC: indexed dates have second resolution, so
    ``date >= value`` and ``date < value`` mean the same once rounded up."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    if value.microsecond:
        value = value.replace(microsecond=0) + timedelta(seconds=1)
    return value


class SearchIndex(ABC):
    """The mailbox search index. Writes are idempotent: indexing a document again replaces it."""

    @abstractmethod
    def index_documents(self, documents: Iterable[dict[str, Any]]) -> BulkReport:
        """Index (create or replace) documents built by ``message_document``; id and routing come from them."""

    @abstractmethod
    def delete(self, mailbox_id: MailboxId, uids: Sequence[int]) -> None:
        """Remove the documents of ``uids`` in ``mailbox_id``; missing ones are fine."""

    @abstractmethod
    def update_flags(self, mailbox_id: MailboxId, updates: Sequence[FlagsUpdate]) -> list[int]:
        """Partial update of the flags and modSeq; returns the uids that have no document.

        An update older than the indexed document (lower modSeq) is ignored, so updates delivered
        out of order leave the newest flags.
        """

    @abstractmethod
    def delete_mailbox(self, mailbox_id: MailboxId) -> None:
        """Remove every document of ``mailbox_id``."""

    @abstractmethod
    def search(self, query: SearchQuery) -> list[SearchHit]: ...

    @abstractmethod
    def highlight(self, query: SearchQuery) -> list[Snippet]:
        """The messages matching ``query`` (at most ``query.limit`` hits), with the words of its text
        criteria highlighted in their subject and body (James's ``SearchHighlighter``)."""

    @abstractmethod
    def get(self, mailbox_id: MailboxId, uid: int) -> dict[str, Any] | None:
        """The indexed document (its ``_source``), or None."""

    def refresh(self) -> None:  # noqa: B027 - nothing to do for an index that is always up to date
        """Make every write so far visible to searches (tests, the end of a reindex)."""

    def ensure(self) -> None:  # noqa: B027 - nothing to create for an index in memory
        """Create what the index needs if missing (the OpenSearch index and its aliases)."""
