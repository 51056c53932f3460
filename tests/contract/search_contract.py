"""Behaviour every ``SearchIndex`` adapter must have (memory and OpenSearch).

Subclasses provide ``index``. Documents are built by ``message_document`` from raw messages, as
the indexing listener and the reindex job build them. Every test works in mailboxes of its own
(fresh TIMEUUIDs), so a shared index is fine: a search is always scoped to mailbox ids.

Addresses use real top-level domains: James's ``keep_mail_and_url`` analyzer keeps an address
whole only when it recognises its domain (``bob@sender.test`` becomes ``bob`` and ``sender.test``,
so the query ``dave@sender.test`` finds Bob through the shared domain word, in James too).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from mailserver.model.address import Username
from mailserver.model.flags import Flags, SystemFlag
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.message import MessageMetadata
from mailserver.search.api import FlagsUpdate, SearchHit, SearchIndex, SearchQuery, Snippet, Sort, SortClause
from mailserver.search.document import message_document

T0 = datetime(2024, 5, 2, 10, 0, tzinfo=UTC)
NO_FLAGS = Flags()


def raw_message(*, sender: str = "Bob Sender <bob@sender.com>", to: str = "Alice <alice@example.com>",
                cc: str | None = None, subject: str = "hello", body: str = "plain words", html: str | None = None,
                attachment: str | None = None, date: str | None = None) -> bytes:
    headers = [f"From: {sender}", f"To: {to}", f"Subject: {subject}", f"Message-ID: <{uuid.uuid4().hex}@test>",
               "MIME-Version: 1.0"]
    if cc:
        headers.append(f"Cc: {cc}")
    if date:
        headers.append(f"Date: {date}")
    parts = []
    if html is not None:
        parts.append(f"Content-Type: text/html; charset=utf-8\r\n\r\n{html}\r\n")
    else:
        parts.append(f"Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n")
    if attachment:
        parts.append(f'Content-Type: application/octet-stream\r\nContent-Disposition: attachment; '
                     f'filename="{attachment}"\r\nContent-Transfer-Encoding: base64\r\n\r\nAAECAw==\r\n')
    boundary = "b-" + uuid.uuid4().hex
    headers.append(f'Content-Type: multipart/mixed; boundary="{boundary}"')
    content = "".join(f"--{boundary}\r\n{part}" for part in parts) + f"--{boundary}--\r\n"
    return ("\r\n".join(headers) + "\r\n\r\n" + content).encode()


class SearchIndexContract:
    user = Username.of("alice@example.com")

    @pytest.fixture
    def index(self) -> SearchIndex:
        raise NotImplementedError

    @pytest.fixture
    def mailbox(self) -> MailboxId:
        return MailboxId.generate()

    @pytest.fixture
    def add(self, index):
        """add(mailbox, uid, raw=..., flags=..., internal_date=..., size=...) -> SearchHit, visible at once."""

        def add(mailbox: MailboxId, uid: int, raw: bytes | None = None, *, flags: Flags = NO_FLAGS,
                internal_date: datetime = T0, size: int | None = None, mod_seq: int = 1) -> SearchHit:
            raw = raw if raw is not None else raw_message()
            metadata = MessageMetadata(
                mailbox_id=mailbox, message_id=MessageId.generate(), uid=uid, mod_seq=mod_seq, flags=flags,
                thread_id=MessageId.generate(), internal_date=internal_date, save_date=internal_date,
                body_start_octet=0, size=len(raw) if size is None else size, header_blob_id="h")
            report = index.index_documents([message_document(metadata, raw, self.user)])
            assert (report.succeeded, report.failures) == (1, {})
            index.refresh()
            return SearchHit(mailbox, uid, metadata.message_id)

        return add

    @staticmethod
    def uids(index: SearchIndex, mailbox: MailboxId | list[MailboxId], **criteria) -> list[int]:
        return [hit.uid for hit in index.search(SearchQuery.of(mailbox, **criteria))]

    # ------------------------------------------------------------------ addresses
    def test_sender_found_by_address_local_part_display_name_and_domain(self, index, add, mailbox):
        add(mailbox, 1, raw_message(sender="Bob Builder <bob@sender.com>"))
        add(mailbox, 2, raw_message(sender="Carol <carol@elsewhere.com>"))
        for query in ("bob@sender.com", "BOB@Sender.com", "bob", "Builder", "sender"):
            assert self.uids(index, mailbox, from_=query) == [1], query
        assert self.uids(index, mailbox, from_="dave@sender.com") == []
        assert self.uids(index, mailbox, from_="carol") == [2]

    def test_recipients_found_in_to_and_cc_each_in_its_own_field(self, index, add, mailbox):
        add(mailbox, 1, raw_message(to="Alice <alice@example.com>", cc="Eve <eve@example.com>"))
        add(mailbox, 2, raw_message(to="eve@example.com"))
        assert self.uids(index, mailbox, to="alice@example.com") == [1]
        assert self.uids(index, mailbox, to="eve") == [2]
        assert self.uids(index, mailbox, cc="eve@example.com") == [1]
        assert self.uids(index, mailbox, cc="alice") == []

    def test_encoded_display_names_are_decoded(self, index, add, mailbox):
        add(mailbox, 1, raw_message(sender="=?utf-8?q?Fran=C3=A7ois?= <francois@sender.com>"))
        assert self.uids(index, mailbox, from_="François") == [1]

    # ------------------------------------------------------------------ text
    def test_subject_matches_every_word_of_the_query(self, index, add, mailbox):
        add(mailbox, 1, raw_message(subject="Quarterly budget review"))
        add(mailbox, 2, raw_message(subject="Budget draft"))
        assert self.uids(index, mailbox, subject="budget") == [1, 2]
        assert self.uids(index, mailbox, subject="quarterly BUDGET") == [1]
        assert self.uids(index, mailbox, subject="budget meeting") == []
        assert self.uids(index, mailbox, subject="budg") == []   # words, not prefixes

    def test_subject_is_indexed_without_reply_and_forward_markers(self, index, add, mailbox):
        add(mailbox, 1, raw_message(subject="Re: Fwd: [team] launch plan"))
        assert self.uids(index, mailbox, subject="launch plan") == [1]
        assert self.uids(index, mailbox, subject="team") == [1]   # the bracketed qualifier too

    def test_body_words_in_plain_text_or_html(self, index, add, mailbox):
        add(mailbox, 1, raw_message(body="the pineapple harvest starts monday"))
        add(mailbox, 2, raw_message(html="<p>A <b>pineapple</b> cake</p><script>var harvest;</script>"))
        assert self.uids(index, mailbox, body="pineapple") == [1, 2]
        assert self.uids(index, mailbox, body="pineapple harvest") == [1]   # script text is not body text
        assert self.uids(index, mailbox, body="Cake") == [2]
        assert self.uids(index, mailbox, body="mango") == []

    def test_attachment_file_name_and_extension(self, index, add, mailbox):
        add(mailbox, 1, raw_message(attachment="invoice-2024.pdf"))
        add(mailbox, 2, raw_message())
        assert self.uids(index, mailbox, attachment_file_name="invoice-2024.pdf") == [1]
        assert self.uids(index, mailbox, attachment_file_name="pdf") == [1]
        assert self.uids(index, mailbox, has_attachment=True) == [1]
        assert self.uids(index, mailbox, has_attachment=False) == [2]

    def test_nested_criteria_headers_and_attachments_as_a_jmap_text_filter_builds_them(self, index, add, mailbox):
        add(mailbox, 1, raw_message(sender="Carol <carol@example.org>", subject="lunch", body="pizza"))
        add(mailbox, 2, raw_message(subject="budget", attachment="figures.pdf"))
        add(mailbox, 3, raw_message(subject="budget", body="draft numbers", cc="Dave <dave@example.net>"))
        c = SearchQuery.criteria

        def text(value: str) -> SearchQuery:   # Email/query's ``text`` condition
            return c(any_of=(c(from_=value), c(to=value), c(cc=value), c(bcc=value), c(subject=value),
                             c(body=value), c(attachment_text=value), c(attachment_file_name=value)))

        assert self.uids(index, mailbox, all_of=(text("carol@example.org"),)) == [1]
        assert self.uids(index, mailbox, all_of=(text("pdf"),)) == [2]
        assert self.uids(index, mailbox, all_of=(text("dave"),)) == [3]
        assert self.uids(index, mailbox, subject="budget", none_of=(c(attachment_text="pdf"),)) == [3]
        assert self.uids(index, mailbox, headers=(("Cc", None),)) == [3]
        assert self.uids(index, mailbox, headers=(("subject", "lunch dinner"),)) == [1]
        assert self.uids(index, mailbox, any_of=(c(uids=()),)) == []

    # ------------------------------------------------------------------ flags, dates, sizes
    def test_system_flags_set_and_unset(self, index, add, mailbox):
        add(mailbox, 1, flags=Flags.of(SystemFlag.SEEN, SystemFlag.FLAGGED))
        add(mailbox, 2, flags=Flags.of(SystemFlag.DELETED))
        add(mailbox, 3)
        assert self.uids(index, mailbox, flags_set={SystemFlag.SEEN}) == [1]
        assert self.uids(index, mailbox, flags_unset={SystemFlag.SEEN}) == [2, 3]
        assert self.uids(index, mailbox, flags_set={SystemFlag.FLAGGED, SystemFlag.SEEN}) == [1]
        assert self.uids(index, mailbox, flags_set={SystemFlag.DELETED}) == [2]
        assert self.uids(index, mailbox, flags_unset={SystemFlag.DELETED, SystemFlag.FLAGGED}) == [3]

    def test_user_flags_compare_case_insensitively(self, index, add, mailbox):
        add(mailbox, 1, flags=Flags.of(user=["$Important"]))
        add(mailbox, 2)
        assert self.uids(index, mailbox, user_flags_set={"$important"}) == [1]
        assert self.uids(index, mailbox, user_flags_unset={"$IMPORTANT"}) == [2]

    def test_internal_date_range_from_inclusive_before_exclusive(self, index, add, mailbox):
        for uid in (1, 2, 3):
            add(mailbox, uid, internal_date=T0 + timedelta(days=uid))
        day = timedelta(days=1)
        assert self.uids(index, mailbox, internal_date_from=T0 + 2 * day) == [2, 3]
        assert self.uids(index, mailbox, internal_date_before=T0 + 2 * day) == [1]
        assert self.uids(index, mailbox, internal_date_from=T0 + day, internal_date_before=T0 + 3 * day) == [1, 2]
        # second resolution: a bound inside a second is rounded up to the next one
        assert self.uids(index, mailbox, internal_date_from=T0 + 2 * day + timedelta(milliseconds=1)) == [3]

    def test_size_bounds_are_strict(self, index, add, mailbox):
        for uid, size in ((1, 100), (2, 200), (3, 300)):
            add(mailbox, uid, size=size)
        assert self.uids(index, mailbox, size_greater_than=200) == [3]
        assert self.uids(index, mailbox, size_less_than=200) == [1]
        assert self.uids(index, mailbox, size_greater_than=99, size_less_than=300) == [1, 2]

    # ------------------------------------------------------------------ scope, sort, limit
    def test_search_covers_only_the_given_mailboxes(self, index, add):
        first, second, other = MailboxId.generate(), MailboxId.generate(), MailboxId.generate()
        add(first, 1, raw_message(subject="shared topic"))
        add(second, 7, raw_message(subject="shared topic"))
        add(other, 3, raw_message(subject="shared topic"))
        hits = index.search(SearchQuery.of([first, second], subject="shared topic"))
        assert {(h.mailbox_id, h.uid) for h in hits} == {(first, 1), (second, 7)}
        assert index.search(SearchQuery(mailbox_ids=())) == []

    def test_search_over_many_mailboxes_is_not_routed_to_a_few_shards(self, index, add):
        mailboxes = [MailboxId.generate() for _ in range(6)]
        for position, mailbox in enumerate(mailboxes):
            add(mailbox, position + 1, raw_message(subject="wide search"))
        hits = index.search(SearchQuery.of(mailboxes, subject="wide search"))
        assert sorted(h.uid for h in hits) == [1, 2, 3, 4, 5, 6]

    def test_hits_carry_message_id_mailbox_and_uid(self, index, add, mailbox):
        added = add(mailbox, 5)
        [hit] = index.search(SearchQuery.of(mailbox))
        assert (hit.mailbox_id, hit.uid, hit.message_id) == (mailbox, 5, added.message_id)
        assert self.uids(index, mailbox, message_id=added.message_id) == [5]
        assert self.uids(index, mailbox, uids=(5, 6)) == [5]

    def test_sorts(self, index, add, mailbox):
        add(mailbox, 1, raw_message(date="Wed, 01 May 2024 09:00:00 +0000"), internal_date=T0 + timedelta(hours=3),
            size=500)
        add(mailbox, 2, raw_message(date="Mon, 06 May 2024 09:00:00 +0000"), internal_date=T0 + timedelta(hours=1),
            size=100)
        add(mailbox, 3, raw_message(date="Fri, 03 May 2024 09:00:00 +0000"), internal_date=T0 + timedelta(hours=2),
            size=300)
        assert self.uids(index, mailbox) == [1, 2, 3]   # default: uid
        assert self.uids(index, mailbox, sort=(Sort(SortClause.ARRIVAL),)) == [2, 3, 1]
        assert self.uids(index, mailbox, sort=(Sort(SortClause.ARRIVAL, reverse=True),)) == [1, 3, 2]
        assert self.uids(index, mailbox, sort=(Sort(SortClause.SIZE),)) == [2, 3, 1]
        assert self.uids(index, mailbox, sort=(Sort(SortClause.SENT_DATE, reverse=True),)) == [2, 3, 1]
        assert self.uids(index, mailbox, sort=(Sort(SortClause.UID, reverse=True),)) == [3, 2, 1]

    def test_equal_sort_keys_then_mailbox_id_and_uid(self, index, add):
        first, second = sorted([MailboxId.generate(), MailboxId.generate()], key=str)
        for mailbox, uid in ((second, 1), (first, 2), (first, 1)):
            add(mailbox, uid, size=42)
        hits = index.search(SearchQuery.of([first, second], sort=(Sort(SortClause.SIZE),)))
        assert [(h.mailbox_id, h.uid) for h in hits] == [(first, 1), (first, 2), (second, 1)]

    def test_limit(self, index, add, mailbox):
        for uid in range(1, 6):
            add(mailbox, uid)
        assert self.uids(index, mailbox, limit=2) == [1, 2]
        assert self.uids(index, mailbox, limit=2, sort=(Sort(SortClause.UID, reverse=True),)) == [5, 4]

    def test_criteria_combine_with_and(self, index, add, mailbox):
        add(mailbox, 1, raw_message(sender="bob@sender.com", subject="report"), flags=Flags.of(SystemFlag.SEEN))
        add(mailbox, 2, raw_message(sender="bob@sender.com", subject="report"))
        add(mailbox, 3, raw_message(sender="carol@sender.com", subject="report"))
        assert self.uids(index, mailbox, from_="bob", subject="report", flags_unset={SystemFlag.SEEN}) == [2]

    # ------------------------------------------------------------------ writes
    def test_indexing_again_replaces_the_document(self, index, add, mailbox):
        add(mailbox, 1, raw_message(subject="first version"))
        add(mailbox, 1, raw_message(subject="second version"))
        assert self.uids(index, mailbox) == [1]
        assert self.uids(index, mailbox, subject="first") == []
        assert self.uids(index, mailbox, subject="second") == [1]

    def test_get_returns_the_indexed_document(self, index, add, mailbox):
        added = add(mailbox, 4, flags=Flags.of(SystemFlag.ANSWERED))
        document = index.get(mailbox, 4)
        assert document["messageId"] == str(added.message_id)
        assert (document["mailboxId"], document["uid"], document["isAnswered"]) == (str(mailbox), 4, True)
        assert document["user"] == "alice@example.com"
        assert index.get(mailbox, 5) is None

    def test_delete_removes_the_given_uids_only(self, index, add, mailbox):
        for uid in (1, 2, 3):
            add(mailbox, uid)
        index.delete(mailbox, [1, 3, 99])   # 99 was never indexed: fine
        index.refresh()
        assert self.uids(index, mailbox) == [2]
        index.delete(mailbox, [])

    def test_flags_update_is_partial_and_reports_missing_documents(self, index, add, mailbox):
        add(mailbox, 1, raw_message(subject="keep me"), flags=Flags.of(SystemFlag.SEEN), mod_seq=3)
        missing = index.update_flags(mailbox, [FlagsUpdate(1, Flags.of(SystemFlag.FLAGGED, user=["work"]), 4),
                                               FlagsUpdate(2, Flags.of(SystemFlag.FLAGGED), 4)])
        index.refresh()
        assert missing == [2]
        document = index.get(mailbox, 1)
        assert (document["isFlagged"], document["isUnread"], document["userFlags"], document["modSeq"]) == \
               (True, True, ["work"], 4)
        assert self.uids(index, mailbox, subject="keep me", flags_set={SystemFlag.FLAGGED}) == [1]

    def test_an_older_flags_update_does_not_overwrite_a_newer_one(self, index, add, mailbox):
        add(mailbox, 1, mod_seq=1)
        index.update_flags(mailbox, [FlagsUpdate(1, Flags.of(SystemFlag.SEEN), 5)])
        index.update_flags(mailbox, [FlagsUpdate(1, Flags.of(SystemFlag.FLAGGED), 4)])   # delivered late
        index.refresh()
        document = index.get(mailbox, 1)
        assert (document["isUnread"], document["isFlagged"], document["modSeq"]) == (False, False, 5)

    def test_delete_mailbox_removes_its_documents_only(self, index, add):
        doomed, kept = MailboxId.generate(), MailboxId.generate()
        for uid in (1, 2):
            add(doomed, uid)
            add(kept, uid)
        index.delete_mailbox(doomed)
        index.refresh()
        assert self.uids(index, doomed) == []
        assert self.uids(index, kept) == [1, 2]

    def test_highlight_marks_the_searched_words_in_subject_and_body(self, index, add, mailbox):
        hit = add(mailbox, 1, raw_message(subject="Quarterly moth report", body="A moth & a <b>lamp</b>"))
        add(mailbox, 2, raw_message(subject="nothing here", body="nothing"))
        snippets = index.highlight(SearchQuery.of(mailbox, any_of=(SearchQuery.criteria(subject="moth"),
                                                                   SearchQuery.criteria(body="moth"))))
        assert snippets == [Snippet(hit.message_id, "Quarterly <mark>moth</mark> report",
                                    "A <mark>moth</mark> &amp; a &lt;b&gt;lamp&lt;&#x2F;b&gt;")]

    def test_highlight_without_a_text_match_has_no_fragments(self, index, add, mailbox):
        hit = add(mailbox, 1, raw_message(subject="moth"))
        assert index.highlight(SearchQuery.of(mailbox, message_id=hit.message_id)) == [
            Snippet(hit.message_id, None, None)]
