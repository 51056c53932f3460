"""Recipient resolution with James's semantics (see the resolver module docstring)."""

from __future__ import annotations

import pytest

from mailserver.domains.memory import MemoryDomainList
from mailserver.model.address import MailAddress
from mailserver.rrt.mapping import Mapping, MappingSource, MappingType
from mailserver.rrt.memory import MemoryRecipientRewriteTable
from mailserver.rrt.resolver import MappingErrorException, RecipientRewriter, RecursionLoopError


def a(text: str) -> MailAddress:
    return MailAddress.of(text)


@pytest.fixture
def domains():
    return MemoryDomainList(["d.test", "e.test"])


@pytest.fixture
def rrt(domains):
    return MemoryRecipientRewriteTable(domains)


@pytest.fixture
def rewriter(rrt, domains):
    return RecipientRewriter(rrt, domains)


def addresses(result: list[MailAddress]) -> list[str]:
    return sorted(map(str, result))


def test_no_mapping_maps_to_itself(rewriter):
    assert rewriter.rewrite(a("bob@d.test")) == [a("bob@d.test")]
    assert rewriter.resolve(a("bob@d.test")) == []


def test_address_alias_and_forward(rrt, rewriter):
    rrt.add_address_mapping("postmaster@d.test", "admin@d.test")
    rrt.add_alias("bobby@d.test", "bob@d.test")
    rrt.add_forward("carol@d.test", "carol@remote.test")
    assert rewriter.rewrite(a("postmaster@d.test")) == [a("admin@d.test")]
    assert rewriter.rewrite(a("bobby@d.test")) == [a("bob@d.test")]
    assert rewriter.rewrite(a("carol@d.test")) == [a("carol@remote.test")]


def test_source_lookup_is_case_insensitive(rrt, rewriter):
    rrt.add_alias("bobby@d.test", "bob@d.test")
    assert rewriter.rewrite(a("Bobby@D.TEST")) == [a("bob@d.test")]


def test_result_types_are_kept_for_forward_group_alias(rrt, rewriter):
    rrt.add_forward("f@d.test", "x@remote.test")
    rrt.add_group("g@d.test", "y@d.test")
    rrt.add_regex_mapping("r@d.test", "r@(.*):rr@${1}")
    assert rewriter.resolve(a("f@d.test")) == [Mapping(MappingType.FORWARD, "x@remote.test")]
    assert rewriter.resolve(a("g@d.test")) == [Mapping(MappingType.GROUP, "y@d.test")]
    assert rewriter.resolve(a("r@d.test")) == [Mapping(MappingType.ADDRESS, "rr@d.test")]


def test_group_fans_out_and_members_are_resolved(rrt, rewriter):
    rrt.add_group("team@d.test", "alice@d.test")
    rrt.add_group("team@d.test", "bob@d.test")
    rrt.add_group("team@d.test", "ext@remote.test")
    rrt.add_alias("bob@d.test", "robert@e.test")
    assert addresses(rewriter.rewrite(a("team@d.test"))) == ["alice@d.test", "ext@remote.test", "robert@e.test"]


def test_nested_groups_and_duplicates(rrt, rewriter):
    rrt.add_group("all@d.test", "team@d.test")
    rrt.add_group("all@d.test", "alice@d.test")
    rrt.add_group("team@d.test", "alice@d.test")
    rrt.add_group("team@d.test", "bob@d.test")
    assert addresses(rewriter.rewrite(a("all@d.test"))) == ["alice@d.test", "bob@d.test"]


def test_recursion_until_stable(rrt, rewriter):
    rrt.add_alias("a1@d.test", "a2@d.test")
    rrt.add_alias("a2@d.test", "a3@d.test")
    rrt.add_forward("a3@d.test", "final@remote.test")
    assert rewriter.rewrite(a("a1@d.test")) == [a("final@remote.test")]


def test_forward_keeps_a_local_copy_only_when_listing_itself(rrt, rewriter):
    rrt.add_forward("alice@d.test", "alice@d.test")
    rrt.add_forward("alice@d.test", "alice@remote.test")
    rrt.add_forward("bob@d.test", "bob@remote.test")
    assert addresses(rewriter.rewrite(a("alice@d.test"))) == ["alice@d.test", "alice@remote.test"]
    assert rewriter.rewrite(a("bob@d.test")) == [a("bob@remote.test")]


def test_identity_of_other_types_cancels_the_level(rrt, rewriter):
    # James: a non-forward mapping to itself skips the whole level; the address is kept as is.
    rrt.add_mapping("x@d.test", Mapping.address("x@d.test"))
    rrt.add_mapping("x@d.test", Mapping.address("other@d.test"))
    assert rewriter.rewrite(a("x@d.test")) == [a("x@d.test")]


def test_domain_mapping_rewrites_the_domain(rrt, domains, rewriter):
    domains.add("old.test")
    rrt.add_domain_mapping("old.test", "d.test")
    rrt.add_alias("bob@d.test", "robert@d.test")
    assert rewriter.rewrite(a("alice@old.test")) == [a("alice@d.test")]
    assert rewriter.rewrite(a("bob@old.test")) == [a("robert@d.test")]


def test_domain_alias_and_chains(rrt, domains, rewriter):
    domains.add("alias.test")
    domains.add("alias2.test")
    rrt.add_domain_alias("alias2.test", "alias.test")
    rrt.add_domain_alias("alias.test", "d.test")
    assert rewriter.rewrite(a("bob@alias2.test")) == [a("bob@d.test")]


def test_user_mapping_wins_over_domain_mapping(rrt, domains, rewriter):
    domains.add("old.test")
    rrt.add_domain_mapping("old.test", "d.test")
    rrt.add_forward("vip@old.test", "vip@remote.test")
    assert rewriter.rewrite(a("vip@old.test")) == [a("vip@remote.test")]
    assert rewriter.rewrite(a("other@old.test")) == [a("other@d.test")]


def test_global_wildcard_is_not_consulted(rrt, rewriter):
    rrt.add_mapping(MappingSource.wildcard(), Mapping.address("catchall@d.test"))
    assert rewriter.rewrite(a("bob@d.test")) == [a("bob@d.test")]


def test_regex_with_group_substitution(rrt, rewriter):
    rrt.add_regex_mapping("*@d.test", r"(.*)\+(.*)@d\.test:${1}@e.test")
    assert rewriter.rewrite(a("bob+news@d.test")) == [a("bob@e.test")]
    assert rewriter.rewrite(a("bob@d.test")) == [a("bob@d.test")]    # no match: nothing applies


def test_regex_dollar_n_form_and_missing_domain(rrt, rewriter):
    rrt.add_regex_mapping("*@d.test", r"(.*)-(.*)@d\.test:$2.$1")
    assert rewriter.rewrite(a("john-doe@d.test")) == [a("doe.john@d.test")]


def test_regex_must_match_the_whole_address(rrt, rewriter):
    rrt.add_regex_mapping("bob@d.test", "bob:x@e.test")
    assert rewriter.rewrite(a("bob@d.test")) == [a("bob@d.test")]


def test_a_backtracking_regex_mapping_is_cut_short_and_sends_the_recipient_to_the_error_path(rrt, rewriter):
    # (a|aa)+y against 40 "a" then "x" tries every split of the a's (Fibonacci(40)) before failing,
    # minutes of a backtracking engine holding the GIL.
    rrt.add_regex_mapping(f"{'a' * 40}x@d.test", "(a|aa)+y@d\\.test:never@e.test")
    with pytest.raises(MappingErrorException, match="took longer than 50 ms"):
        rewriter.rewrite(a(f"{'a' * 40}x@d.test"))


def test_error_mapping_raises(rrt, rewriter):
    rrt.add_error_mapping("gone@d.test", "550 this user left")
    with pytest.raises(MappingErrorException, match="550 this user left") as info:
        rewriter.rewrite(a("gone@d.test"))
    assert info.value.message == "550 this user left"


def test_error_reached_through_recursion(rrt, rewriter):
    rrt.add_group("team@d.test", "ok@d.test")
    rrt.add_group("team@d.test", "gone@d.test")
    rrt.add_error_mapping("gone@d.test", "550 nope")
    with pytest.raises(MappingErrorException, match="550 nope"):
        rewriter.rewrite(a("team@d.test"))


def test_loop_raises_recursion_loop_error(rrt, rewriter):
    rrt.add_alias("a@d.test", "b@d.test")
    rrt.add_alias("b@d.test", "a@d.test")
    with pytest.raises(RecursionLoopError, match="Too many mappings") as info:
        rewriter.rewrite(a("a@d.test"))
    assert isinstance(info.value, MappingErrorException)
    assert info.value.max_loops == 10


def test_forward_loop_is_a_loop_too(rrt, rewriter):
    rrt.add_forward("a@d.test", "b@d.test")
    rrt.add_forward("b@d.test", "a@d.test")
    with pytest.raises(RecursionLoopError):
        rewriter.rewrite(a("a@d.test"))


def chain(rrt, length: int) -> None:
    for i in range(length):
        rrt.add_alias(f"c{i}@d.test", f"c{i + 1}@d.test")


def test_depth_limit_allows_max_loops_lookups(rrt, domains):
    chain(rrt, 9)    # c0 -> ... -> c9: 10 lookups
    assert RecipientRewriter(rrt, domains, max_loops=10).rewrite(a("c0@d.test")) == [a("c9@d.test")]


def test_depth_limit_is_enforced(rrt, domains):
    chain(rrt, 10)   # c0 -> ... -> c10: 11 lookups
    with pytest.raises(RecursionLoopError):
        RecipientRewriter(rrt, domains, max_loops=10).rewrite(a("c0@d.test"))
    assert RecipientRewriter(rrt, domains, max_loops=11).rewrite(a("c0@d.test")) == [a("c10@d.test")]


def test_max_loops_must_be_positive(rrt, domains):
    with pytest.raises(ValueError):
        RecipientRewriter(rrt, domains, max_loops=0)


def test_types_filter(rrt, rewriter):
    rrt.add_forward("f@d.test", "x@remote.test")
    assert rewriter.rewrite(a("f@d.test"), types={MappingType.ALIAS}) == [a("f@d.test")]


def rewriter_over_rows(domains, *rows: tuple[MappingSource, Mapping]) -> RecipientRewriter:
    """A rewriter over a table holding ``rows`` as stored, unvalidated (a legacy writer's)."""
    return RecipientRewriter(MemoryRecipientRewriteTable(domains, rows=rows), domains)


def test_legacy_rows_without_domain_take_the_current_domain(domains):
    rewriter = rewriter_over_rows(domains, (MappingSource.of("legacy", "d.test"), Mapping.stored("forward:bob")))
    assert rewriter.rewrite(a("legacy@d.test")) == [a("bob@d.test")]


def test_unusable_stored_mapping_is_a_mapping_error(domains):
    rewriter = rewriter_over_rows(
        domains, (MappingSource.of("broken", "d.test"), Mapping.stored("regex:(unclosed:x@y.test")))
    with pytest.raises(MappingErrorException, match="cannot apply mapping"):
        rewriter.rewrite(a("broken@d.test"))


def test_split_local(rewriter):
    local, remote = rewriter.split_local([a("x@d.test"), a("y@remote.test"), a("z@E.test")])
    assert local == [a("x@d.test"), a("z@e.test")]
    assert remote == [a("y@remote.test")]
