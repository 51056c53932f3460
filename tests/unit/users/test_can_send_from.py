"""Who may send from which address: the user, the aliases that lead to it, and their domain aliases."""

from __future__ import annotations

from mailserver.model.address import MailAddress, Username
from mailserver.rrt.can_send_from import CanSendFrom
from mailserver.rrt.memory import MemoryRecipientRewriteTable

USER = Username.of("alice@example.com")


def can(rrt: MemoryRecipientRewriteTable, address: str) -> bool:
    return CanSendFrom(rrt)(USER, MailAddress.of(address))


def test_a_user_sends_from_their_own_address_in_any_case():
    rrt = MemoryRecipientRewriteTable()
    assert can(rrt, "alice@example.com") and can(rrt, "Alice@Example.COM")
    assert not can(rrt, "bob@example.com") and not can(rrt, "alice@other.example")


def test_aliases_followed_back_and_domain_aliases_allow_sending():
    rrt = MemoryRecipientRewriteTable()
    rrt.add_alias("al@example.com", "alice@example.com")
    rrt.add_alias("a@example.com", "al@example.com")          # an alias of an alias
    rrt.add_domain_alias("example.org", "example.com")
    rrt.add_forward("fwd@example.com", "alice@example.com")   # a forward is not an alias: no sending from it
    assert can(rrt, "al@example.com") and can(rrt, "a@example.com")
    assert can(rrt, "alice@example.org") and can(rrt, "al@example.org")
    assert not can(rrt, "fwd@example.com")
    assert CanSendFrom(rrt).addresses(USER) == {MailAddress.of(a) for a in (
        "alice@example.com", "al@example.com", "a@example.com",
        "alice@example.org", "al@example.org", "a@example.org")}


def test_an_alias_loop_ends():
    rrt = MemoryRecipientRewriteTable()
    rrt.add_alias("x@example.com", "alice@example.com")
    rrt.add_alias("alice@example.com", "x@example.com")
    assert can(rrt, "x@example.com") and not can(rrt, "y@example.com")
