"""Behaviour every mailbox storage adapter must give the manager (memory and Cassandra + S3).

Subclasses provide the ``ctx`` fixture (a ``MailboxContext`` with a ``RecordingListener``
registered on its bus). Tests create their own users, so a shared keyspace is fine.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from mailserver.events.in_process import RecordingListener
from mailserver.mailbox import errors
from mailserver.mailbox.content import MalformedMessage
from mailserver.mailbox.manager import MailboxState, StoredBody
from mailserver.mailbox.store import MailboxCounters
from mailserver.model import events
from mailserver.model.acl import InvalidAcl
from mailserver.model.address import Username
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.ids import MessageId
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import QuotaLimits, QuotaRoot, QuotaUsage

MESSAGE = (b"From: alice@example.com\r\nTo: bob@example.com\r\nSubject: hello\r\n"
           b"Content-Type: text/plain; charset=utf-8\r\n\r\nHello Bob,\r\nsee you tomorrow.\r\n")
WITH_ATTACHMENT = (
    b"From: a@example.com\r\nSubject: report\r\nMIME-Version: 1.0\r\n"
    b"Content-Type: multipart/mixed; boundary=XYZ\r\n\r\n--XYZ\r\nContent-Type: text/plain\r\n\r\n"
    b"Please find the report attached.\r\n--XYZ\r\nContent-Type: application/pdf\r\n"
    b"Content-Disposition: attachment; filename=report.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n"
    b"JVBERi0xLjQK\r\n--XYZ--\r\n")


def blobs_exist(ctx, content) -> list[bool]:
    bucket = ctx.blobs.default_bucket
    return [ctx.blobs.exists(bucket, content.header_blob_id), ctx.blobs.exists(bucket, content.body_blob_id)]


def message(n: int) -> bytes:
    return MESSAGE.replace(b"hello", f"hello {n}".encode())


class MailboxContract:
    @pytest.fixture
    def ctx(self):
        raise NotImplementedError

    @pytest.fixture
    def recorder(self, ctx) -> RecordingListener:
        return next(listener for listener in ctx.bus.listeners if isinstance(listener, RecordingListener))

    @pytest.fixture
    def user(self) -> Username:
        return Username.of(f"u{uuid.uuid4().hex[:10]}@example.com")

    @pytest.fixture
    def inbox(self, ctx, user) -> MailboxPath:
        path = MailboxPath.inbox(user)
        ctx.manager.create_mailbox(path)
        return path

    # ---------------------------------------------------------------- mailboxes
    def test_create_mailbox_creates_missing_parents_and_emits_mailbox_added(self, ctx, recorder, user):
        path = MailboxPath.of(user, "Archive.2026.November")
        ctx.manager.create_mailbox(path)
        names = [m.path.name for m in ctx.manager.list_mailboxes(user)]
        assert names == ["Archive", "Archive.2026", "Archive.2026.November"]
        added = [e.path.name for e in recorder.of_type(events.MailboxAdded) if e.user == user]
        assert added == names

    def test_create_existing_mailbox_fails(self, ctx, inbox):
        with pytest.raises(errors.MailboxExists):
            ctx.manager.create_mailbox(inbox)

    def test_lookup_by_id_and_by_path_agree(self, ctx, user):
        mailbox_id = ctx.manager.create_mailbox(MailboxPath.of(user, "Work"))
        by_id = ctx.manager.get_mailbox_by_id(mailbox_id)
        assert by_id.path == MailboxPath.of(user, "Work")
        assert ctx.manager.get_mailbox(by_id.path).id == mailbox_id
        with pytest.raises(errors.MailboxNotFound):
            ctx.manager.get_mailbox(MailboxPath.of(user, "Nope"))

    def test_rename_moves_children_and_emits_renamed(self, ctx, recorder, user):
        ctx.manager.create_mailbox(MailboxPath.of(user, "Projects.Alpha"))
        ctx.manager.rename_mailbox(MailboxPath.of(user, "Projects"), MailboxPath.of(user, "Old.Projects"))
        names = sorted(m.path.name for m in ctx.manager.list_mailboxes(user))
        assert names == ["Old", "Old.Projects", "Old.Projects.Alpha"]
        renamed = {(e.path.name, e.new_path.name) for e in recorder.of_type(events.MailboxRenamed) if e.user == user}
        assert renamed == {("Projects", "Old.Projects"), ("Projects.Alpha", "Old.Projects.Alpha")}

    def test_inbox_cannot_be_renamed_and_target_must_be_free(self, ctx, inbox, user):
        with pytest.raises(errors.InboxCannotBeRenamedOrDeleted):
            ctx.manager.rename_mailbox(inbox, MailboxPath.of(user, "Other"))
        ctx.manager.create_mailbox(MailboxPath.of(user, "A"))
        ctx.manager.create_mailbox(MailboxPath.of(user, "B"))
        with pytest.raises(errors.MailboxExists):
            ctx.manager.rename_mailbox(MailboxPath.of(user, "A"), MailboxPath.of(user, "B"))

    def test_delete_with_children_needs_recursive_and_releases_quota(self, ctx, recorder, user):
        parent, child = MailboxPath.of(user, "Lists"), MailboxPath.of(user, "Lists.Python")
        ctx.manager.create_mailbox(child)
        appended = ctx.manager.append(child, message(1))
        content = ctx.messages.get_content(appended.id.message_id)
        with pytest.raises(errors.MailboxHasChildren):
            ctx.manager.delete_mailbox(parent)
        ctx.manager.delete_mailbox(parent, recursive=True)
        assert ctx.manager.list_mailboxes(user) == []
        # James's DeleteMessageListener: real deletes without deduplication, left to the blob GC with it
        assert blobs_exist(ctx, content) == [ctx.blobs.deduplicating] * 2
        deletions = {e.path.name: e.deleted_message_count for e in recorder.of_type(events.MailboxDeletion)
                     if e.user == user}
        assert deletions == {"Lists": 0, "Lists.Python": 1}
        assert ctx.quota.current(QuotaRoot.for_user(user)) == QuotaUsage(0, 0)

    def test_acl_set_read_remove_and_event(self, ctx, recorder, user):
        path = MailboxPath.of(user, "Shared")
        ctx.manager.create_mailbox(path)
        ctx.manager.set_rights(path, "alice@example.com", "rl")
        ctx.manager.set_rights(path, "-bob@example.com", "w")
        assert ctx.manager.get_acl(path) == {"alice@example.com": "lr", "-bob@example.com": "w"}
        ctx.manager.set_rights(path, "alice@example.com", "")
        assert ctx.manager.get_acl(path) == {"-bob@example.com": "w"}
        updates = [e for e in recorder.of_type(events.MailboxACLUpdated) if e.user == user]
        assert [(e.old_acl, e.new_acl) for e in updates] == [
            ({}, {"alice@example.com": "lr"}),
            ({"alice@example.com": "lr"}, {"alice@example.com": "lr", "-bob@example.com": "w"}),
            ({"alice@example.com": "lr", "-bob@example.com": "w"}, {"-bob@example.com": "w"})]
        assert updates[-1].changes() == ({}, {"alice@example.com": "lr"})
        with pytest.raises(InvalidAcl):
            ctx.manager.set_rights(path, "alice@example.com", "lrz")
        ctx.manager.delete_mailbox(path)
        deletion = next(e for e in recorder.of_type(events.MailboxDeletion) if e.path == path)
        assert deletion.acl == {"-bob@example.com": "w"}

    # ---------------------------------------------------------------- append and read
    def test_append_allocates_increasing_uids_and_modseqs_and_reads_back(self, ctx, inbox):
        first = ctx.manager.append(inbox, message(1))
        second = ctx.manager.append(inbox, message(2))
        assert (first.id.uid, second.id.uid) == (1, 2)
        assert second.metadata.mod_seq > first.metadata.mod_seq
        assert ctx.manager.read_message(second.id.message_id) == message(2)
        listed = ctx.manager.get_messages(inbox)
        assert [m.uid for m in listed] == [1, 2]
        assert listed[0].size == len(message(1))
        assert listed[0].body_start_octet == message(1).index(b"\r\n\r\n") + 4

    def test_append_under_a_chosen_message_id_is_found_by_it(self, ctx, inbox):
        chosen = MessageId.generate()
        assert ctx.manager.find_message(chosen) == []

        result = ctx.manager.append(inbox, message(1), message_id=chosen)

        assert result.id.message_id == chosen
        assert [m.uid for m in ctx.manager.find_message(chosen)] == [result.id.uid]
        assert ctx.manager.read_message(chosen) == message(1)

    def test_append_with_a_stored_body_takes_that_blob_over(self, ctx, inbox, user):
        header, body = message(1).split(b"\r\n\r\n", 1)
        body_blob = str(ctx.blobs.save(ctx.blobs.default_bucket, body))

        result = ctx.manager.append(inbox, header + b"\r\n\r\n", body=StoredBody(body_blob, len(body)))

        assert ctx.manager.read_message(result.id.message_id) == message(1)
        assert ctx.manager.body_blob_id(result.id.message_id) == body_blob      # no second copy
        [listed] = ctx.manager.get_messages(inbox)
        assert (listed.size, listed.body_start_octet) == (len(message(1)), len(header) + 4)
        assert ctx.quota.current(QuotaRoot.for_user(user)) == QuotaUsage(1, len(message(1)))

    def test_append_with_a_stored_body_refuses_raw_content_beyond_the_header(self, ctx, inbox):
        body_blob = str(ctx.blobs.save(ctx.blobs.default_bucket, b"body\r\n"))
        with pytest.raises(ValueError):
            ctx.manager.append(inbox, message(1), body=StoredBody(body_blob, 6))
        assert ctx.manager.get_messages(inbox) == []

    def test_append_once_stores_one_copy_however_often_it_runs(self, ctx, recorder, inbox, user):
        chosen = MessageId.generate()

        first = ctx.manager.append_once(inbox, message(1), chosen, is_delivery=True)
        again = ctx.manager.append_once(inbox, message(1), chosen, is_delivery=True)

        assert first.appended is not None and first.appended.id.message_id == chosen
        assert again.appended is None and again.finished == ()
        assert [m.message_id for m in ctx.manager.get_messages(inbox)] == [chosen]
        assert ctx.manager.counters(inbox) == MailboxCounters(1, 1)
        assert ctx.quota.current(QuotaRoot.for_user(user)) == QuotaUsage(1, len(message(1)))
        assert len([e for e in recorder.of_type(events.Added) if e.user == user]) == 1

    def test_append_once_does_not_store_again_a_copy_moved_elsewhere(self, ctx, inbox, user):
        archive = MailboxPath.of(user, "Archive")
        ctx.manager.create_mailbox(archive)
        chosen = MessageId.generate()
        first = ctx.manager.append_once(inbox, message(1), chosen)
        ctx.manager.move(inbox, archive, [first.appended.id.uid])

        again = ctx.manager.append_once(inbox, message(1), chosen)

        assert again.appended is None
        assert ctx.manager.get_messages(inbox) == []
        assert [m.message_id for m in ctx.manager.get_messages(archive)] == [chosen]

    def test_mailbox_state_follows_appends_flags_and_expunges_and_uid_next_never_drops(self, ctx, inbox):
        assert ctx.manager.mailbox_state(inbox) == MailboxState(count=0, unseen=0, uid_next=1, highest_modseq=0)
        ctx.manager.append(inbox, message(1))
        second = ctx.manager.append(inbox, message(2))
        state = ctx.manager.mailbox_state(inbox)
        assert (state.count, state.unseen, state.uid_next) == (2, 2, 3)
        assert state.highest_modseq == second.metadata.mod_seq
        [updated] = ctx.manager.set_flags(inbox, Flags.of(SystemFlag.SEEN, SystemFlag.DELETED), FlagsUpdateMode.ADD,
                                          [second.id.uid])
        assert ctx.manager.mailbox_state(inbox).highest_modseq == updated.mod_seq > state.highest_modseq
        ctx.manager.expunge(inbox)
        after = ctx.manager.mailbox_state(inbox)
        assert (after.count, after.unseen, after.uid_next) == (1, 1, 3), "an expunged uid is never announced again"

    def test_header_and_streamed_content_read_back_byte_identical(self, ctx, inbox):
        raw = WITH_ATTACHMENT
        result = ctx.manager.append(inbox, raw)
        assert ctx.manager.read_header(result.metadata) == raw[:result.metadata.body_start_octet]
        with ctx.manager.open_message(result.id.message_id) as stream:
            chunks = [stream.read(7), stream.read()]
        assert b"".join(chunks) == raw and len(chunks[0]) == 7
        with pytest.raises(errors.MessageNotFound):
            ctx.manager.open_message(MessageId.generate())

    def test_append_updates_counters_quota_fast_view_and_emits_added(self, ctx, recorder, inbox, user):
        result = ctx.manager.append(inbox, message(1), is_delivery=True)
        assert ctx.manager.counters(inbox) == MailboxCounters(1, 1)
        assert ctx.quota.current(QuotaRoot.for_user(user)) == QuotaUsage(1, len(message(1)))
        assert ctx.fast_view.retrieve(result.id.message_id) == ("Hello Bob, see you tomorrow.", False)
        added = [e for e in recorder.of_type(events.Added) if e.user == user]
        assert len(added) == 1 and added[0].is_delivery and added[0].added[0].uid == 1
        assert added[0].added[0].flags.has(SystemFlag.RECENT)

    def test_each_quota_update_publishes_the_usage_and_limits_of_the_root(self, ctx, recorder, inbox, user):
        root = QuotaRoot.for_user(user)
        ctx.quota.set_user_limits(root, QuotaLimits(count=10, size=10_000))
        first = ctx.manager.append(inbox, message(1))
        ctx.manager.append(inbox, message(2))
        ctx.manager.delete_messages(user, [first.id.message_id])
        updates = [e for e in recorder.of_type(events.QuotaUsageUpdatedEvent) if e.user == user]
        sizes = [len(message(1)), len(message(1)) + len(message(2)), len(message(2))]
        assert [(e.usage.count, e.usage.size) for e in updates] == list(zip([1, 2, 1], sizes, strict=True))
        assert {e.quota_root for e in updates} == {root}
        assert all(e.limits == QuotaLimits(count=10, size=10_000) for e in updates)
        as_json = updates[-1].to_json()["QuotaUsageUpdatedEvent"]
        assert as_json["quotaRoot"] == f"#private&{user}" and "sessionId" not in as_json
        assert as_json["countQuota"] == {"used": 1, "limit": 10, "limits": {"User": 10}}
        assert as_json["sizeQuota"] == {"used": len(message(2)), "limit": 10_000, "limits": {"User": 10_000}}

    def test_enforcement_and_events_use_the_user_limit_before_the_domain_limit(self, ctx, recorder):
        user = Username.of(f"u@d{uuid.uuid4().hex[:10]}.test")   # a domain of its own: its limits are ours
        inbox = MailboxPath.inbox(user)
        ctx.manager.create_mailbox(inbox)
        ctx.quota.set_domain_limits(user.domain, QuotaLimits(count=1))
        ctx.manager.append(inbox, message(1))
        with pytest.raises(errors.OverQuota, match="count"):
            ctx.manager.append(inbox, message(2))
        ctx.quota.set_user_limits(QuotaRoot.for_user(user), QuotaLimits(count=-1))   # unlimited lifts the domain's
        ctx.manager.append(inbox, message(2))
        last = [e for e in recorder.of_type(events.QuotaUsageUpdatedEvent) if e.user == user][-1]
        assert last.usage.count == 2 and last.limits.count is None
        assert last.to_json()["QuotaUsageUpdatedEvent"]["countQuota"]["limits"] == {"User": None, "Domain": 1}

    def test_fast_view_detects_attachments(self, ctx, inbox):
        result = ctx.manager.append(inbox, WITH_ATTACHMENT)
        assert ctx.fast_view.retrieve(result.id.message_id) == ("Please find the report attached.", True)

    def test_malformed_message_is_refused_and_writes_nothing(self, ctx, inbox, user):
        with pytest.raises(MalformedMessage):
            ctx.manager.append(inbox, b"this is not a header\r\n\r\nbody")
        assert ctx.manager.get_messages(inbox) == []
        assert ctx.quota.current(QuotaRoot.for_user(user)) == QuotaUsage(0, 0)

    def test_append_over_quota_is_refused_and_writes_nothing(self, ctx, inbox, user):
        ctx.quota.set_user_limits(QuotaRoot.for_user(user), QuotaLimits(count=1))
        ctx.manager.append(inbox, message(1))
        with pytest.raises(errors.OverQuota, match="count"):
            ctx.manager.append(inbox, message(2))
        assert [m.uid for m in ctx.manager.get_messages(inbox)] == [1]
        assert ctx.quota.current(QuotaRoot.for_user(user)).count == 1

    def test_internal_date_is_kept(self, ctx, inbox):
        when = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
        ctx.manager.append(inbox, message(1), internal_date=when)
        stored = ctx.manager.get_messages(inbox)[0].internal_date
        assert stored.replace(tzinfo=UTC) == when

    def test_internal_and_save_dates_are_whole_milliseconds_everywhere(self, ctx, recorder, inbox):
        when = datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)   # microseconds: a Java Date has none
        appended = ctx.manager.append(inbox, message(1), internal_date=when).metadata
        [added] = [e for e in recorder.of_type(events.Added) if e.mailbox_id == appended.mailbox_id]
        [listed] = ctx.manager.get_messages(inbox)
        millis = datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
        assert appended.internal_date == added.added[0].internal_date == listed.internal_date.replace(tzinfo=UTC) \
            == millis
        assert appended.save_date is not None and appended.save_date.microsecond % 1000 == 0
        assert added.added[0].save_date == listed.save_date.replace(tzinfo=UTC) == appended.save_date

    # ---------------------------------------------------------------- copy and move
    def test_copy_shares_the_message_id_and_counts_quota_twice(self, ctx, recorder, inbox, user):
        archive = MailboxPath.of(user, "Archive")
        ctx.manager.create_mailbox(archive)
        original = ctx.manager.append(inbox, message(1))
        [copied] = ctx.manager.copy(inbox, archive)
        assert copied.message_id == original.id.message_id and copied.uid == 1
        assert {m.mailbox_id for m in ctx.manager.find_message(original.id.message_id)} == \
            {ctx.manager.get_mailbox(inbox).id, ctx.manager.get_mailbox(archive).id}
        assert ctx.quota.current(QuotaRoot.for_user(user)).count == 2
        copy_event = next(e for e in recorder.of_type(events.Added) if e.path == archive)
        assert copy_event.is_appended is False

    def test_move_leaves_source_empty_and_quota_unchanged(self, ctx, recorder, inbox, user):
        archive = MailboxPath.of(user, "Archive")
        ctx.manager.create_mailbox(archive)
        original = ctx.manager.append(inbox, message(1))
        ctx.manager.move(inbox, archive, [original.id.uid])
        assert ctx.manager.get_messages(inbox) == []
        assert [m.message_id for m in ctx.manager.get_messages(archive)] == [original.id.message_id]
        assert ctx.manager.counters(inbox) == MailboxCounters(0, 0)
        assert ctx.manager.counters(archive).count == 1
        assert ctx.quota.current(QuotaRoot.for_user(user)) == QuotaUsage(1, len(message(1)))
        assert any(original.id.message_id in e.message_ids for e in recorder.of_type(events.MessageMoveEvent))
        assert ctx.manager.read_message(original.id.message_id) == message(1), "content survives a move"

    # ---------------------------------------------------------------- flags
    def test_flags_add_remove_replace_with_counters_and_events(self, ctx, recorder, inbox, user):
        ctx.manager.append(inbox, message(1))
        ctx.manager.append(inbox, message(2))
        before = ctx.manager.get_messages(inbox)[0].mod_seq
        updated = ctx.manager.set_flags(inbox, Flags.of(SystemFlag.SEEN, user=["$work"]), FlagsUpdateMode.ADD, [1])
        assert len(updated) == 1 and updated[0].mod_seq > before
        assert ctx.manager.counters(inbox) == MailboxCounters(2, 1)
        first = ctx.manager.get_messages(inbox, 1, 1)[0]
        assert first.flags == Flags.of(SystemFlag.SEEN, user=["$work"])
        ctx.manager.set_flags(inbox, Flags.of(SystemFlag.SEEN), FlagsUpdateMode.REMOVE, [1])
        assert ctx.manager.counters(inbox) == MailboxCounters(2, 2)
        ctx.manager.set_flags(inbox, Flags.of(SystemFlag.FLAGGED), FlagsUpdateMode.REPLACE)
        assert all(m.flags == Flags.of(SystemFlag.FLAGGED) for m in ctx.manager.get_messages(inbox))
        updates = [e for e in recorder.of_type(events.FlagsUpdated) if e.user == user]
        assert [len(e.updated) for e in updates] == [1, 1, 2]
        assert updates[0].updated[0].old_flags == Flags() and updates[0].updated[0].new_flags.has(SystemFlag.SEEN)

    def test_setting_the_same_flags_again_changes_nothing(self, ctx, inbox):
        ctx.manager.append(inbox, message(1), flags=Flags.of(SystemFlag.SEEN))
        assert ctx.manager.set_flags(inbox, Flags.of(SystemFlag.SEEN), FlagsUpdateMode.ADD) == []

    # ---------------------------------------------------------------- expunge and delete
    def test_expunge_removes_deleted_messages_and_their_content(self, ctx, recorder, inbox, user):
        keep = ctx.manager.append(inbox, message(1))
        gone = ctx.manager.append(inbox, message(2))
        gone_content = ctx.messages.get_content(gone.id.message_id)
        ctx.manager.set_flags(inbox, Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD, [gone.id.uid])
        assert ctx.manager.expunge(inbox) == [gone.id.uid]
        assert [m.uid for m in ctx.manager.get_messages(inbox)] == [keep.id.uid]
        assert ctx.quota.current(QuotaRoot.for_user(user)) == QuotaUsage(1, len(message(1)))
        assert ctx.manager.find_message(gone.id.message_id) == []
        assert ctx.messages.get_content(gone.id.message_id) is None
        assert ctx.fast_view.retrieve(gone.id.message_id) is None
        assert blobs_exist(ctx, gone_content) == [ctx.blobs.deduplicating] * 2   # James's DeleteMessageListener
        assert ctx.manager.read_message(keep.id.message_id) == message(1)
        assert [e.expunged[0].uid for e in recorder.of_type(events.Expunged) if e.user == user] == [gone.id.uid]

    def test_expunge_keeps_content_still_referenced_by_a_copy(self, ctx, inbox, user):
        archive = MailboxPath.of(user, "Archive")
        ctx.manager.create_mailbox(archive)
        original = ctx.manager.append(inbox, message(1))
        ctx.manager.copy(inbox, archive)
        content = ctx.messages.get_content(original.id.message_id)
        ctx.manager.set_flags(inbox, Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD)
        ctx.manager.expunge(inbox)
        assert ctx.manager.read_message(original.id.message_id) == message(1)
        assert blobs_exist(ctx, content) == [True, True]
        ctx.manager.set_flags(archive, Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD)
        ctx.manager.expunge(archive)   # the last reference: without deduplication the blobs go now
        assert blobs_exist(ctx, content) == [ctx.blobs.deduplicating] * 2

    def test_delete_messages_by_id_in_every_mailbox_of_the_user(self, ctx, inbox, user):
        archive = MailboxPath.of(user, "Archive")
        ctx.manager.create_mailbox(archive)
        original = ctx.manager.append(inbox, message(1))
        ctx.manager.copy(inbox, archive)
        assert ctx.manager.delete_messages(user, [original.id.message_id]) == 2
        assert ctx.manager.find_message(original.id.message_id) == []
        assert ctx.quota.current(QuotaRoot.for_user(user)) == QuotaUsage(0, 0)
        other = Username.of(f"x{uuid.uuid4().hex[:8]}@example.com")
        assert ctx.manager.delete_messages(other, [original.id.message_id]) == 0
