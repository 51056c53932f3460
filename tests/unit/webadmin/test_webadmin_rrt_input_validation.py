"""Issue 16, rewrite-table routes: the addresses and domains they store follow the user-name and
domain rules (``mailserver/webadmin/validation.py``) instead of being quietly folded into another
name (``alias@d.tld.`` -> ``alias@d.tld``, a fullwidth or zero-width domain -> its ASCII form)."""

from __future__ import annotations

import pytest

from mailserver.rrt.mapping import Mapping
from tests.unit.webadmin.webadmin_support import error

# Each folded into a valid, different name by the lenient parsers (or, for NUL in a source, kept).
BAD_ADDRESSES = [
    "x@d.tld.",                    # trailing dot
    "x@%EF%BD%84.tld",             # fullwidth d
    "x@d%E2%80%8B.tld",            # zero-width space
    "x@d%C2%AD.tld",               # soft hyphen
    "%3Cx@d.tld%3E",               # angle brackets: an address is stored bare
]
ROUTES = {
    "alias source": lambda a: ("put", f"/address/aliases/alice@d.tld/sources/{a}"),
    "group address": lambda a: ("put", f"/address/groups/{a}/member@x.org"),
    "group member": lambda a: ("put", f"/address/groups/team@d.tld/{a}"),
    "forward target": lambda a: ("put", f"/address/forwards/alice@d.tld/targets/{a}"),
    "address mapping source": lambda a: ("post", f"/mappings/address/{a}/targets/alice@d.tld"),
    "address mapping target": lambda a: ("post", f"/mappings/address/old@d.tld/targets/{a}"),
    "regex mapping source": lambda a: ("post", f"/mappings/regex/{a}/targets/(.*)@d.tld:$1@x.org"),
}


@pytest.fixture
def seeded(client, ctx):
    assert client.put("/domains/d.tld").status_code == 204
    assert client.put("/users/alice@d.tld", json={"password": "secret"}).status_code == 204
    return ctx


def nothing_stored(ctx) -> bool:
    return ctx.rrt.get_all_mappings() == {}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("address", BAD_ADDRESSES)
def test_rewrite_table_addresses_that_are_not_stored(client, seeded, route, address):
    method, path = ROUTES[route](address)
    body = error(getattr(client, method)(path))
    assert (body["statusCode"], body["type"]) == (400, "InvalidArgument")
    assert body["details"]
    assert nothing_stored(seeded)


@pytest.mark.parametrize("route", ROUTES)
def test_rewrite_table_addresses_in_their_normal_form_are_stored(client, seeded, route):
    """Domains lower-cased; a source's local part too (targets keep theirs, as James's MailAddress)."""
    method, path = ROUTES[route]("New.One@D.TLD")
    assert getattr(client, method)(path).status_code == 204
    stored = {s.as_string(): [m.value for m in ms] for s, ms in seeded.rrt.get_all_mappings().items()}
    names = [name for source, values in stored.items() for name in (source, *values)]
    assert "new.one@d.tld" in names or "New.One@d.tld" in names, stored


def test_a_nul_in_a_mapping_source_is_refused(client, seeded):
    body = error(client.post("/mappings/regex/a%00b@d.tld/targets/(.*)@d.tld:$1@x.org"))
    assert body["statusCode"] == 400
    assert nothing_stored(seeded)


@pytest.mark.parametrize("source, destination", [("d.tld.", "x.org"), ("d.tld", "x.org."),
                                                 ("d.tld", "x%00.org"), ("d.tld", "%EF%BD%98.org")])
def test_domain_mappings_use_the_domain_rules(client, seeded, source, destination):
    body = error(client.put(f"/domainMappings/{source}", content=destination.encode().replace(b"%00", b"\0")
                            .replace(b"%EF%BD%98", "\uff58".encode())))
    assert body["statusCode"] == 400
    assert nothing_stored(seeded)


@pytest.mark.parametrize("entries", [
    {"old@d.tld.": [{"type": "Address", "mapping": "alice@d.tld"}]},
    {"old@d.tld": [{"type": "Alias", "mapping": "alice@d.tld."}]},
    {"d.tld": [{"type": "Domain", "mapping": "\uff58.org"}]},
    {"old@d.tld": [{"type": "Error", "mapping": "550 no\u0000such user"}]},
    {"old@d.tld": [{"type": "Address", "mapping": "bob@d.tld"}],            # valid, but the batch
     "bad@d.tld": [{"type": "Forward", "mapping": "x@d\u200b.tld"}]},       # fails as a whole
])
def test_a_bulk_import_with_one_folded_name_stores_nothing(client, seeded, entries):
    body = error(client.put("/mappings", json=entries))
    assert body["statusCode"] == 400
    assert nothing_stored(seeded)


def test_a_bulk_import_keeps_error_texts_and_patterns_with_spaces(client, seeded):
    entries = {"old@d.tld": [{"type": "Error", "mapping": "550 no such user"}],
               "d.tld": [{"type": "Regex", "mapping": "(.*) (.*)@d.tld:$1@x.org"}]}
    assert client.put("/mappings", json=entries).status_code == 204
    assert client.get("/mappings").json() == {"old@d.tld": [{"type": "Error", "mapping": "550 no such user"}],
                                              "d.tld": [{"type": "Regex", "mapping": "(.*) (.*)@d.tld:$1@x.org"}]}


def test_a_mapping_stored_before_the_rules_can_still_be_removed(client, seeded):
    seeded.rrt.add_mapping("old@d.tld", Mapping.alias("alice@d.tld"))   # as an older version folded it
    assert client.delete("/address/aliases/alice@d.tld/sources/old@d.tld.").status_code == 204
    assert nothing_stored(seeded)
