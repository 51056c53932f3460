"""What every change repository does (James's ``MailboxChangeRepositoryContract`` and
``EmailChangeRepositoryContract``), run on memory (unit) and on Cassandra (integration).

A test class subclasses ``ChangeRepositoryContract`` and gives ``repository(table)``; each test
uses an account of its own, so a shared keyspace needs no cleanup.
"""

from __future__ import annotations

import uuid

import pytest

from mailserver.jmap.changes.model import INITIAL, CannotCalculateChanges, Change, new_state
from mailserver.jmap.changes.repository import EMAIL_CHANGE, MAILBOX_CHANGE, ChangeRepository


def ids(n: int) -> list[uuid.UUID]:
    return [uuid.uuid1() for _ in range(n)]


class ChangeRepositoryContract:
    def repository(self, table: str) -> ChangeRepository:
        raise NotImplementedError

    @pytest.fixture
    def account(self) -> str:
        return f"user-{uuid.uuid4().hex[:10]}@changes.test"

    @pytest.fixture
    def mailboxes(self) -> ChangeRepository:
        return self.repository(MAILBOX_CHANGE)

    @pytest.fixture
    def emails(self) -> ChangeRepository:
        return self.repository(EMAIL_CHANGE)

    def test_an_account_without_changes_is_at_the_initial_state(self, mailboxes, account):
        assert mailboxes.latest_state(account) == INITIAL
        answer = mailboxes.since(account, INITIAL)
        assert (answer.new_state, answer.has_more_changes, answer.created) == (INITIAL, False, ())

    def test_changes_since_a_state_are_the_later_ones_and_the_latest_state_is_the_newest(self, mailboxes, account):
        a, b, c = ids(3)
        first = Change(account, created=(a,))
        second = Change(account, created=(b,))
        third = Change(account, updated=(a,), destroyed=(c,))
        for change in (first, second, third):
            mailboxes.save(change)
        assert mailboxes.latest_state(account) == third.state
        answer = mailboxes.since(account, first.state)
        assert (set(answer.created), set(answer.updated), set(answer.destroyed)) == ({b}, {a}, {c})
        assert answer.new_state == third.state and not answer.has_more_changes
        assert set(mailboxes.since(account, INITIAL).created) == {a, b}

    def test_a_state_with_nothing_kept_at_or_after_it_cannot_be_calculated(self, emails, account):
        emails.save(Change(account, created=tuple(ids(1))))
        for unknown in (new_state(), uuid.uuid4()):
            with pytest.raises(CannotCalculateChanges, match=f"State '{unknown}' could not be found"):
                emails.since(account, unknown)

    def test_the_newest_state_has_no_changes_after_it(self, emails, account):
        change = Change(account, created=tuple(ids(1)))
        emails.save(change)
        answer = emails.since(account, change.state)
        assert (answer.new_state, answer.created, answer.has_more_changes) == (change.state, (), False)

    def test_max_changes_stops_before_the_change_that_passes_it(self, emails, account):
        since = Change(account, created=tuple(ids(1)))
        emails.save(since)
        changes = [Change(account, created=tuple(ids(2))) for _ in range(3)]
        for change in changes:
            emails.save(change)
        answer = emails.since(account, since.state, 5)
        assert answer.has_more_changes and answer.new_state == changes[1].state and len(answer.created) == 4
        rest = emails.since(account, answer.new_state, 5)
        assert not rest.has_more_changes and rest.created == changes[2].created

    def test_a_single_change_larger_than_max_changes_cannot_be_calculated(self, emails, account):
        emails.save(Change(account, created=tuple(ids(3))))
        with pytest.raises(CannotCalculateChanges, match="limit 2 is exceeded by a single change"):
            emails.since(account, INITIAL, 2)

    def test_created_then_destroyed_is_in_neither_list(self, emails, account):
        since = Change(account, updated=tuple(ids(1)))
        emails.save(since)
        (a,) = ids(1)
        emails.save(Change(account, created=(a,)))
        emails.save(Change(account, destroyed=(a,)))
        answer = emails.since(account, since.state)
        assert (answer.created, answer.updated, answer.destroyed) == ((), (), ())

    def test_delegated_changes_are_read_only_with_delegation(self, mailboxes, account):
        own = Change(account, created=tuple(ids(1)))
        shared = Change(account, updated=tuple(ids(1)), is_delegated=True)
        mailboxes.save(own)
        mailboxes.save(shared)
        assert mailboxes.latest_state(account) == own.state
        assert mailboxes.latest_state(account, with_delegation=True) == shared.state
        assert mailboxes.since(account, own.state).updated == ()
        assert mailboxes.since(account, own.state, with_delegation=True).updated == shared.updated

    def test_count_changes_only_when_every_returned_change_is_one(self, mailboxes, account):
        (box,) = ids(1)
        since = Change(account, created=(box,))
        mailboxes.save(since)
        mailboxes.save(Change(account, updated=(box,), is_count_change=True))
        assert mailboxes.since(account, since.state).count_changes_only
        mailboxes.save(Change(account, updated=(box,)))   # a rename
        assert not mailboxes.since(account, since.state).count_changes_only

    def test_a_created_mailbox_updated_later_is_only_created(self, mailboxes, account):
        since = Change(account, created=tuple(ids(1)))
        mailboxes.save(since)
        (box,) = ids(1)
        mailboxes.save(Change(account, created=(box,)))
        mailboxes.save(Change(account, updated=(box,), is_count_change=True))
        answer = mailboxes.since(account, since.state)
        assert (answer.created, answer.updated) == ((box,), ())

    def test_accounts_do_not_see_each_others_changes(self, emails, account):
        emails.save(Change(account + ".other", created=tuple(ids(1))))
        assert emails.latest_state(account) == INITIAL
