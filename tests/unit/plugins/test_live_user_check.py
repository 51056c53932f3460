"""A repair's user is one the server knows or one whose mailboxes are still there (a removed user's data)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from mailplatform.live import user_exists
from mailplatform.param_checks import ParamError


def lookups(users: set[str] = frozenset(), owners: set[str] = frozenset(), domains: set[str] = frozenset()):
    return SimpleNamespace(user_exists=lambda user: user in users, owns_mailboxes=lambda user: user in owners,
                           domain_exists=lambda domain: domain in domains)


def test_a_known_user_passes():
    # A rule returns None when the parameter passes and raises ParamError otherwise.
    assert user_exists("user")({"user": "bob@ops.test"}, lookups(users={"bob@ops.test"})) is None


def test_a_removed_user_whose_mailboxes_remain_passes():
    assert user_exists("user")({"user": "gone@ops.test"}, lookups(owners={"gone@ops.test"})) is None


def test_a_user_with_neither_account_nor_mailbox_is_refused_saying_whether_the_domain_is_ours():
    with pytest.raises(ParamError, match=r"param user: no user bob@ops\.tset, nor any mailbox of theirs "
                                         r"\(ops\.tset is not even a domain of this server\)"):
        user_exists("user")({"user": "bob@ops.tset"}, lookups(domains={"ops.test"}))


def test_a_procedure_that_needs_the_account_refuses_a_user_who_only_left_mailboxes():
    with pytest.raises(ParamError, match=r"no user gone@ops\.test \(ops\.test is a domain of this server\)"):
        user_exists("user", or_owns_mailboxes=False)({"user": "gone@ops.test"},
                                                     lookups(owners={"gone@ops.test"}, domains={"ops.test"}))
