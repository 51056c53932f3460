"""Executor side of the search reindex: OpenSearch clients per worker, the flags signature that
compares an indexed document with its ``imapUidTable`` row, and the document of one message.

Lives outside the job module on purpose (a job runs as ``__main__`` and its globals are pickled
by value, which a client cache cannot be). Documents are built with the server's own
``mailserver.search.document.message_document`` (shipped in the job's zip), so the reindex writes
exactly what the indexing listener writes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mailserver.model.flags import Flags, SystemFlag

_LOCK = threading.Lock()
_CLIENTS: dict[tuple[str, ...], Any] = {}
SYSTEM_FLAGS = tuple(SystemFlag)
# The _source fields a comparison needs (never the bodies).
COMPARED_FIELDS = ["mailboxId", "uid", "modSeq", "isAnswered", "isDeleted", "isDraft", "isFlagged", "isRecent",
                   "isUnread", "userFlags"]


@dataclass(frozen=True)
class SearchAccess:
    """What an executor needs to write the index: URLs and the aliases (picklable)."""

    urls: tuple[str, ...]
    read_alias: str
    write_alias: str
    timeout: float = 30.0

    def client(self) -> Any:
        from mailserver.search.config import SearchConfig
        from mailserver.search.index import make_client

        with _LOCK:
            client = _CLIENTS.get(self.urls)
            if client is None:
                client = _CLIENTS[self.urls] = make_client(
                    SearchConfig(urls=self.urls, timeout=self.timeout), max_retries=3)
        return client


def signature(flags: Flags, mod_seq: int | None) -> str:
    """A comparable text of the flags and modseq: ``Answered,Seen|$label,work|42``."""
    system = ",".join(sorted(flag.value for flag in flags.system))
    user = ",".join(sorted(flags.user))
    return f"{system}|{user}|{int(mod_seq or 0)}"


def document_signature(source: Mapping[str, Any]) -> str:
    """The signature of an indexed document (flags read back as James's ``retrieveIndexedFlags``)."""
    from mailserver.search.document import flags_of

    return signature(flags_of(dict(source)), source.get("modSeq"))


def row_flags(row: Mapping[str, Any]) -> Flags:
    system = frozenset(flag for flag in SYSTEM_FLAGS if row.get(flag.column.lower()))
    return Flags(system, frozenset(row.get("userflags") or ()))


@dataclass(frozen=True)
class _Metadata:
    uid: int
    mod_seq: int
    flags: Flags
    size: int
    internal_date: Any
    save_date: Any
    message_id: Any
    thread_id: Any


def build_document(row: Mapping[str, Any], content: bytes, user: str | None) -> dict[str, Any]:
    """The document of one ``imapUidTable`` row (+ its content); without body if that fails (as the listener)."""
    import uuid

    from mailserver.model.ids import MessageId
    from mailserver.search.config import DocumentOptions
    from mailserver.search.document import message_document

    metadata = _Metadata(uid=int(row["uid"]), mod_seq=int(row["modseq"] or 0), flags=row_flags(row),
                         size=int(row.get("fullcontentoctets") or len(content)),
                         internal_date=row["internaldate"], save_date=row.get("save_date"),
                         message_id=MessageId(uuid.UUID(str(row["messageid"]))),
                         thread_id=MessageId(uuid.UUID(str(row.get("threadid") or row["messageid"]))))
    try:
        return message_document(metadata, content, user, mailbox_id=str(row["mailboxid"]))
    except Exception:
        return message_document(metadata, content, user, mailbox_id=str(row["mailboxid"]),
                                options=DocumentOptions(index_body=False, index_attachments=False))


def delete_actions(targets: Iterable[str], doc_ids: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """Bulk delete actions of ``(document id, routing)`` pairs on every target index."""
    return [{"_op_type": "delete", "_index": index, "_id": doc_id, "routing": routing}
            for doc_id, routing in doc_ids for index in targets]


def scroll_signatures(search: SearchAccess, query: Mapping[str, Any], slice_id: int, slices: int,
                      page: int) -> Iterator[tuple[str, int, str]]:
    """(mailbox id, uid, signature) of the documents of one slice of a sliced scroll of the read alias."""
    from opensearchpy import helpers

    body = {"query": query, "slice": {"id": slice_id, "max": slices}}
    for hit in helpers.scan(search.client(), index=search.read_alias, query=body, _source=COMPARED_FIELDS,
                            size=page, preserve_order=False):
        source = hit["_source"]
        yield source["mailboxId"], int(source["uid"]), document_signature(source)
