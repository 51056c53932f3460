"""The search index in memory: documents in a dict, searched by scanning (unit tests, single-process tools).

Matching imitates the OpenSearch adapter's queries on James's analyzers closely enough for the
contract suite: ``standard`` splits words (keeping ``example.com`` and ``don't`` whole),
``keep_mail_and_url`` also keeps addresses whole and drops English stop words, ``simple`` keeps
letters only, ``raw`` sub-fields compare case-insensitively.
"""

from __future__ import annotations

import copy
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from mailserver.model.flags import SystemFlag
from mailserver.model.ids import MailboxId, MessageId
from mailserver.search import mapping as f
from mailserver.search.api import (
    BulkReport,
    FlagsUpdate,
    SearchHit,
    SearchIndex,
    SearchQuery,
    Snippet,
    SortClause,
    whole_second,
)
from mailserver.search.document import document_id, flags_document
from mailserver.search.highlight import ATTACHMENT_TEXT, BODY, SUBJECT, mark, searched_words

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET, the ``stop`` filter's default
STOP_WORDS = frozenset("a an and are as at be but by for if in into is it no not of on or such that the their then "
                       "there these they this to was will with".split())
_WORD = re.compile(r"\w+(?:['.\u2019]\w+)*")
# uax_url_email keeps an address whole only when it knows its top-level domain (IANA's list; a few here)
KNOWN_TLDS = frozenset("com net org edu gov mil int info biz io co app dev me tv eu uk de fr nl be ch at it es pt se "
                       "no dk fi pl cz ru us ca au nz jp cn in br".split())
_EMAIL = re.compile(r"[\w.+'-]+@(?:[\w-]+\.)+([a-z]{2,63})\b")
_LETTERS = re.compile(r"[^\W\d_]+")

FLAG_FIELDS = {SystemFlag.ANSWERED: f.IS_ANSWERED, SystemFlag.DELETED: f.IS_DELETED, SystemFlag.DRAFT: f.IS_DRAFT,
               SystemFlag.FLAGGED: f.IS_FLAGGED, SystemFlag.RECENT: f.IS_RECENT}
SORT_FIELDS = {SortClause.ARRIVAL: f.DATE, SortClause.SENT_DATE: f.SENT_DATE, SortClause.SIZE: f.SIZE,
               SortClause.UID: f.UID}


def standard_tokens(text: str | None) -> list[str]:
    return _WORD.findall((text or "").lower())


def mail_and_url_tokens(text: str | None) -> list[str]:
    lowered = (text or "").lower()
    emails = [m.group(0) for m in _EMAIL.finditer(lowered) if m.group(1) in KNOWN_TLDS]
    rest = _EMAIL.sub(lambda m: " " if m.group(1) in KNOWN_TLDS else m.group(0), lowered)
    return [t for t in [*emails, *_WORD.findall(rest)] if t not in STOP_WORDS]


def simple_tokens(text: str | None) -> list[str]:
    return _LETTERS.findall((text or "").lower())


def normalized(text: str) -> str:
    """The ``case_insensitive`` normalizer: lowercase + asciifolding."""
    folded = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in folded if not unicodedata.combining(c))


def _all_words(query: str, tokens: Iterable[str], analyzer: Callable[[str], list[str]] = standard_tokens) -> bool:
    wanted = analyzer(query)
    have = set(tokens)
    return bool(wanted) and all(w in have for w in wanted)


def matches_address(emailers: list[dict[str, Any]], query: str) -> bool:
    """OR of match(name), match(address), match(domain), match(address.raw) (James's manageAddressFields)."""
    words = mail_and_url_tokens(query)
    for emailer in emailers or ():
        name, address, domain = emailer.get(f.NAME), emailer.get(f.ADDRESS) or "", emailer.get(f.DOMAIN)
        if any(w in mail_and_url_tokens(name) for w in words):
            return True
        if any(w in standard_tokens(address) for w in words):
            return True
        if query in simple_tokens(domain):   # the keyword search analyzer keeps the query as typed
            return True
        if normalized(query) == normalized(address):
            return True
    return False


def _date(value: str | None) -> datetime | None:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S%z") if value else None


def matches(document: dict[str, Any], query: SearchQuery) -> bool:
    if document[f.MAILBOX_ID] not in {str(m) for m in query.mailbox_ids}:
        return False
    return criteria_hold(document, query)


def _any_word(query: str, tokens: Iterable[str], analyzer: Callable[[str], list[str]]) -> bool:
    """A match query's default operator (OR): one word of the query is enough."""
    have = set(tokens)
    return any(w in have for w in analyzer(query))


def _header_holds(document: dict[str, Any], name: str, value: str | None) -> bool:
    for header in document.get(f.HEADERS) or []:
        if header.get(f.NAME) == name and (
                value is None or _any_word(value, mail_and_url_tokens(header.get(f.VALUE)), mail_and_url_tokens)):
            return True
    return False


def criteria_hold(document: dict[str, Any], query: SearchQuery) -> bool:
    """The query's criteria, its scope aside."""
    if not all(criteria_hold(document, q) for q in query.all_of):
        return False
    if query.any_of and not any(criteria_hold(document, q) for q in query.any_of):
        return False
    if any(criteria_hold(document, q) for q in query.none_of):
        return False
    if not all(_header_holds(document, name, value) for name, value in query.headers):
        return False
    if query.attachment_text is not None:
        if not any(_all_words(query.attachment_text, standard_tokens(a.get(f.TEXT_CONTENT)))
                   or a.get(f.FILE_EXTENSION) == query.attachment_text for a in document.get(f.ATTACHMENTS) or []):
            return False
    for field_name, value in ((f.FROM, query.from_), (f.TO, query.to), (f.CC, query.cc), (f.BCC, query.bcc)):
        if value is not None and not matches_address(document.get(field_name) or [], value):
            return False
    if query.subject is not None:
        tokens = [t for s in document.get(f.SUBJECT) or [] for t in mail_and_url_tokens(s)]
        if not _all_words(query.subject, tokens, mail_and_url_tokens):
            return False
    if query.body is not None:
        if not (_all_words(query.body, standard_tokens(document.get(f.TEXT_BODY)))
                or _all_words(query.body, standard_tokens(document.get(f.HTML_BODY)))):
            return False
    if query.attachment_file_name is not None:
        attachments = document.get(f.ATTACHMENTS) or []
        if not any(_all_words(query.attachment_file_name, standard_tokens(a.get(f.FILE_NAME)))
                   or a.get(f.FILE_EXTENSION) == query.attachment_file_name for a in attachments):
            return False
    if query.has_attachment is not None and bool(document.get(f.HAS_ATTACHMENT)) != query.has_attachment:
        return False
    for flag in query.flags_set:
        if not _flag(document, flag):
            return False
    for flag in query.flags_unset:
        if _flag(document, flag):
            return False
    user_flags = {normalized(u) for u in document.get(f.USER_FLAGS) or []}
    if any(normalized(u) not in user_flags for u in query.user_flags_set):
        return False
    if any(normalized(u) in user_flags for u in query.user_flags_unset):
        return False
    date = _date(document.get(f.DATE))
    if query.internal_date_from is not None and not (date and date >= whole_second(query.internal_date_from)):
        return False
    if query.internal_date_before is not None and not (date and date < whole_second(query.internal_date_before)):
        return False
    size = document.get(f.SIZE, 0)
    if query.size_greater_than is not None and not size > query.size_greater_than:
        return False
    if query.size_less_than is not None and not size < query.size_less_than:
        return False
    if query.uids is not None and document.get(f.UID) not in set(query.uids):
        return False
    return query.message_id is None or document.get(f.MESSAGE_ID) == str(query.message_id)


def _flag(document: dict[str, Any], flag: SystemFlag) -> bool:
    if flag is SystemFlag.SEEN:
        return not document.get(f.IS_UNREAD, True)
    return bool(document.get(FLAG_FIELDS[flag]))


def sort_documents(documents: list[dict[str, Any]], query: SearchQuery) -> list[dict[str, Any]]:
    """Sorted by the query's clauses, then mailbox id and uid ascending (the adapters' tie-breakers)."""
    result = sorted(documents, key=lambda d: (d[f.MAILBOX_ID], d[f.UID]))
    for sort in reversed(query.sort):
        field_name = SORT_FIELDS[sort.clause]
        result.sort(key=_sort_key(field_name), reverse=sort.reverse)
    return result


def _sort_key(field_name: str) -> Callable[[dict[str, Any]], Any]:
    if field_name in (f.DATE, f.SENT_DATE):
        return lambda d: _date(d.get(field_name))
    return lambda d: d.get(field_name)


class MemorySearchIndex(SearchIndex):
    def __init__(self) -> None:
        self.documents: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def index_documents(self, documents: Iterable[dict[str, Any]]) -> BulkReport:
        report = BulkReport()
        with self._lock:
            for document in documents:
                self.documents[document_id(document[f.MAILBOX_ID], document[f.UID])] = copy.deepcopy(document)
                report.succeeded += 1
        return report

    def delete(self, mailbox_id: MailboxId, uids: Sequence[int]) -> None:
        with self._lock:
            for uid in uids:
                self.documents.pop(document_id(mailbox_id, uid), None)

    def update_flags(self, mailbox_id: MailboxId, updates: Sequence[FlagsUpdate]) -> list[int]:
        missing = []
        with self._lock:
            for update in updates:
                document = self.documents.get(document_id(mailbox_id, update.uid))
                if document is None:
                    missing.append(update.uid)
                elif document.get(f.MODSEQ) is None or document[f.MODSEQ] <= update.mod_seq:
                    document.update(flags_document(update.flags, update.mod_seq))
        return missing

    def delete_mailbox(self, mailbox_id: MailboxId) -> None:
        with self._lock:
            for key in [k for k, d in self.documents.items() if d[f.MAILBOX_ID] == str(mailbox_id)]:
                del self.documents[key]

    def search(self, query: SearchQuery) -> list[SearchHit]:
        return [SearchHit.of_document(d) for d in self._found(query)]

    def highlight(self, query: SearchQuery) -> list[Snippet]:
        return [_snippet(d, query) for d in self._found(query)]

    def _found(self, query: SearchQuery) -> list[dict[str, Any]]:
        if not query.mailbox_ids:
            return []
        with self._lock:
            found = [d for d in self.documents.values() if matches(d, query)]
        return sort_documents(found, query)[:query.limit]

    def get(self, mailbox_id: MailboxId, uid: int) -> dict[str, Any] | None:
        with self._lock:
            document = self.documents.get(document_id(mailbox_id, uid))
            return copy.deepcopy(document) if document is not None else None


def _snippet(document: dict[str, Any], query: SearchQuery) -> Snippet:
    """The subject, then the text body, the HTML body or an attachment's text, as OpenSearch's."""
    subject = mark(" ".join(document.get(f.SUBJECT) or []), searched_words(query, SUBJECT))
    body_words = searched_words(query, BODY)
    attachment_words = searched_words(query, ATTACHMENT_TEXT)
    candidates = [mark(document.get(f.TEXT_BODY), body_words), mark(document.get(f.HTML_BODY), body_words),
                  *(mark(a.get(f.TEXT_CONTENT), attachment_words) for a in document.get(f.ATTACHMENTS) or [])]
    return Snippet(MessageId.of(document[f.MESSAGE_ID]), subject, next((c for c in candidates if c), None))
