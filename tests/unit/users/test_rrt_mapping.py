"""The mapping model: James's prefixes, parsing, validation, sources."""

from __future__ import annotations

import pytest

from mailserver.model.address import Domain, InvalidAddress, MailAddress
from mailserver.rrt.mapping import InvalidMapping, Mapping, MappingSource, MappingType, as_source, split_regex


@pytest.mark.parametrize(("text", "mapping_type", "value"), [
    ("regex:(.*)@a.test:${1}@b.test", MappingType.REGEX, "(.*)@a.test:${1}@b.test"),
    ("domain:b.test", MappingType.DOMAIN, "b.test"),
    ("domainAlias:b.test", MappingType.DOMAIN_ALIAS, "b.test"),
    ("error:550 user unknown", MappingType.ERROR, "550 user unknown"),
    ("forward:bob@b.test", MappingType.FORWARD, "bob@b.test"),
    ("group:bob@b.test", MappingType.GROUP, "bob@b.test"),
    ("alias:bob@b.test", MappingType.ALIAS, "bob@b.test"),
    ("bob@b.test", MappingType.ADDRESS, "bob@b.test"),
])
def test_parse_and_as_string_round_trip(text, mapping_type, value):
    mapping = Mapping.parse(text)
    assert (mapping.type, mapping.value) == (mapping_type, value)
    assert mapping.as_string() == text == str(mapping)


def test_prefixes_are_james_ones():
    assert {t.james_name: t.prefix for t in MappingType} == {
        "Regex": "regex:", "Domain": "domain:", "DomainAlias": "domainAlias:", "Error": "error:",
        "Forward": "forward:", "Group": "group:", "Alias": "alias:", "Address": ""}


def test_type_from_james_name_is_case_insensitive():
    assert MappingType.from_name("domainalias") is MappingType.DOMAIN_ALIAS
    assert MappingType.from_name("Group") is MappingType.GROUP
    with pytest.raises(InvalidMapping, match="unknown mapping type"):
        MappingType.from_name("bogus")


def test_values_are_normalised():
    assert Mapping.forward(" Bob@B.TEST ").value == "Bob@b.test"
    assert Mapping.domain("B.Test.").value == "b.test"
    assert Mapping.group(MailAddress.of("x@y.test")) == Mapping.parse("group:x@y.test")


@pytest.mark.parametrize("text", ["forward:not an address", "group:", "alias:a@", "nobody", "x:y@z.test"])
def test_address_like_mappings_need_an_address(text):
    with pytest.raises(InvalidMapping, match="needs a mail address"):
        Mapping.parse(text)


@pytest.mark.parametrize("text", ["domain:", "domain:a b", "domainAlias:-bad.test"])
def test_domain_mappings_need_a_domain(text):
    with pytest.raises(InvalidMapping, match="needs a domain"):
        Mapping.parse(text)


def test_regex_must_compile():
    with pytest.raises(InvalidMapping, match=r"invalid regex '\(\.\*@a\.test'"):
        Mapping.regex("(.*@a.test:${1}@b.test")


@pytest.mark.parametrize("value", ["(.*)@a.test", "(.*)@a.test:", ":x@y.test"])
def test_regex_needs_pattern_and_replacement(value):
    with pytest.raises(InvalidMapping, match="<pattern>:<replacement>"):
        Mapping.regex(value)


def test_regex_split_on_last_colon_allows_non_capturing_groups():
    pattern, replacement = split_regex("(?:a|b)(.*)@x.test:${1}@y.test")
    assert pattern.fullmatch("a1@x.test") and replacement == "${1}@y.test"


def test_stored_mappings_are_not_validated():
    legacy = Mapping.stored("forward:not valid")
    assert (legacy.type, legacy.value) == (MappingType.FORWARD, "not valid")
    assert legacy.as_mail_address() is None
    with pytest.raises(InvalidMapping):
        legacy.validated()


def test_as_mail_address():
    assert Mapping.alias("a@b.test").as_mail_address() == MailAddress.of("a@b.test")
    assert Mapping.domain("b.test").as_mail_address() is None


# -- sources ---------------------------------------------------------------------------------------
def test_source_forms():
    assert MappingSource.from_address(MailAddress.of("Bob@D.test")).as_string() == "bob@d.test"
    assert MappingSource.from_domain(Domain.of("D.test")).as_string() == "*@d.test"
    assert MappingSource.wildcard().as_string() == "*@*"
    assert MappingSource.of("bob", "*").as_string() == "bob@*"


def test_source_parse():
    assert MappingSource.parse("Bob@D.test") == MappingSource("bob", "d.test")
    assert MappingSource.parse("*@d.test") == MappingSource.from_domain("d.test")
    assert MappingSource.parse("d.test") == MappingSource.from_domain("d.test")
    assert MappingSource.parse("*@*") == MappingSource.wildcard()
    assert as_source("a@b.test") == as_source(MailAddress.of("a@b.test")) == MappingSource("a", "b.test")


@pytest.mark.parametrize("text", ["@d.test", "a b@d.test", "bob@bad domain", "a..b@d.test"])
def test_invalid_sources(text):
    with pytest.raises(InvalidAddress):
        MappingSource.parse(text)


def test_source_views():
    assert MappingSource.parse("bob@d.test").as_mail_address() == MailAddress.of("bob@d.test")
    assert MappingSource.from_domain("d.test").as_mail_address() is None
    assert MappingSource.from_domain("d.test").is_domain
    assert not MappingSource.wildcard().is_domain
    assert MappingSource.wildcard().domain_part() is None
    assert MappingSource.stored("x@y@z.test") == MappingSource("x@y", "z.test")
