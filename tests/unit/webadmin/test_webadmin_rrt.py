"""Recipient rewriting routes: groups, forwards, aliases, domain / regex / address mappings, /mappings."""

from __future__ import annotations

import pytest

from tests.unit.webadmin.webadmin_support import error


@pytest.fixture
def setup(client):
    client.put("/domains/d.tld")
    client.put("/domains/e.tld")
    for user in ("bob", "alice"):
        client.put(f"/users/{user}@d.tld", json={"password": "x"})
    return client


def test_groups(setup):
    c = setup
    assert c.put("/address/groups/team@d.tld/bob@d.tld").status_code == 204
    assert c.put("/address/groups/team@d.tld/alice@d.tld").status_code == 204
    assert c.put("/address/groups/team@d.tld/alice@d.tld").status_code == 204   # idempotent
    assert c.get("/address/groups").json() == ["team@d.tld"]
    assert c.get("/address/groups/team@d.tld").json() == ["alice@d.tld", "bob@d.tld"]
    assert c.delete("/address/groups/team@d.tld/bob@d.tld").status_code == 204
    assert c.get("/address/groups/team@d.tld").json() == ["alice@d.tld"]
    assert error(c.get("/address/groups/nogroup@d.tld"))["statusCode"] == 404
    assert error(c.get("/address/groups/not-an-address"))["statusCode"] == 400
    assert error(c.put("/address/groups/team@d.tld"))["statusCode"] == 400
    assert error(c.delete("/address/groups/team@d.tld"))["statusCode"] == 400
    assert c.delete("/address/groups").status_code == 204
    assert c.get("/address/groups").json() == []


def test_group_errors(setup, ctx):
    c = setup
    assert error(c.put("/address/groups/team@unknown.tld/bob@d.tld"))["statusCode"] == 400   # unmanaged domain
    body = error(c.put("/address/groups/bob@d.tld/alice@d.tld"))                          # bob is a user
    assert (body["statusCode"], body["type"]) == (409, "WrongState")
    assert error(c.put("/address/groups/team@d.tld/bad address"))["statusCode"] == 400
    assert ctx.rrt.get_all_mappings() == {}


def test_group_loop_is_409(setup, ctx):
    c = setup
    c.put("/address/groups/g1@d.tld/g2@d.tld")
    body = error(c.put("/address/groups/g2@d.tld/g1@d.tld"))
    assert body["statusCode"] == 409
    assert "loop" in body["message"]
    assert c.get("/address/groups").json() == ["g1@d.tld"]


def test_forwards(setup):
    c = setup
    assert c.put("/address/forwards/bob@d.tld/targets/bob@ext.tld").status_code == 204
    assert c.put("/address/forwards/bob@d.tld/targets/bob@d.tld").status_code == 204   # local copy
    assert c.get("/address/forwards").json() == ["bob@d.tld"]
    assert c.get("/address/forwards/bob@d.tld").json() == [{"mailAddress": "bob@d.tld"},
                                                           {"mailAddress": "bob@ext.tld"}]
    assert error(c.put("/address/forwards/nobody@d.tld/targets/x@ext.tld"))["statusCode"] == 404
    assert error(c.put("/address/forwards/bob@d.tld/targets/nope"))["statusCode"] == 400
    assert error(c.get("/address/forwards/alice@d.tld"))["statusCode"] == 404
    assert c.delete("/address/forwards/bob@d.tld/targets/bob@ext.tld").status_code == 204
    assert c.get("/address/forwards/bob@d.tld").json() == [{"mailAddress": "bob@d.tld"}]


def test_forward_loop_is_409(setup):
    c = setup
    c.put("/address/forwards/bob@d.tld/targets/alice@d.tld")
    assert error(c.put("/address/forwards/alice@d.tld/targets/bob@d.tld"))["statusCode"] == 409


def test_aliases(setup):
    c = setup
    assert c.put("/address/aliases/bob@d.tld/sources/robert@d.tld").status_code == 204
    assert c.get("/address/aliases").json() == ["bob@d.tld"]
    assert c.get("/address/aliases/bob@d.tld").json() == [{"source": "robert@d.tld"}]
    assert c.get("/address/aliases/alice@d.tld").json() == []
    assert error(c.put("/address/aliases/bob@d.tld/sources/bob@d.tld"))["statusCode"] == 400
    assert error(c.put("/address/aliases/bob@d.tld/sources/alice@d.tld"))["statusCode"] == 409   # alias is a user
    assert error(c.put("/address/aliases/bob@d.tld/sources/x@unknown.tld"))["statusCode"] == 400
    assert c.delete("/address/aliases/bob@d.tld/sources/robert@d.tld").status_code == 204
    assert c.get("/address/aliases").json() == []


def test_domain_mappings(setup):
    c = setup
    assert c.put("/domainMappings/d.tld", content=b"e.tld").status_code == 204
    assert c.get("/domainMappings").json() == {"d.tld": ["e.tld"]}
    assert c.get("/domainMappings/d.tld").json() == ["e.tld"]
    assert error(c.get("/domainMappings/e.tld"))["statusCode"] == 404
    assert error(c.put("/domainMappings/d.tld", content=b"not a domain"))["statusCode"] == 400
    assert error(c.put("/domainMappings/d@tld", content=b"e.tld"))["statusCode"] == 400
    assert c.request("DELETE", "/domainMappings/d.tld", content=b"e.tld").status_code == 204
    assert c.get("/domainMappings").json() == {}


def test_regex_and_address_mappings(setup):
    c = setup
    assert c.post("/mappings/regex/x@d.tld/targets/(.*)@d.tld:${1}@e.tld").status_code == 204
    assert c.post("/mappings/regex/x@d.tld/targets/(.*@d.tld:oops").status_code == 400   # does not compile
    assert c.post("/mappings/address/info@d.tld/targets/bob@d.tld").status_code == 204
    assert error(c.post("/mappings/address/info@d.tld/targets/info@d.tld"))["statusCode"] == 400
    assert c.post("/mappings/address/bob@d.tld/targets/info@d.tld").status_code == 409   # loop
    assert c.get("/mappings/user/x@d.tld").json() == [{"type": "Regex", "mapping": "(.*)@d.tld:${1}@e.tld"}]
    assert c.delete("/mappings/regex/x@d.tld/targets/(.*)@d.tld:${1}@e.tld").status_code == 204
    assert c.delete("/mappings/address/info@d.tld/targets/bob@d.tld").status_code == 204
    assert c.get("/mappings").json() == {}


def test_whole_table_views(setup):
    c = setup
    c.put("/address/aliases/bob@d.tld/sources/robert@d.tld")
    c.put("/address/groups/team@d.tld/bob@d.tld")
    c.put("/domainMappings/e.tld", content=b"d.tld")
    assert c.get("/mappings").json() == {
        "e.tld": [{"type": "Domain", "mapping": "d.tld"}],
        "robert@d.tld": [{"type": "Alias", "mapping": "bob@d.tld"}],
        "team@d.tld": [{"type": "Group", "mapping": "bob@d.tld"}],
    }
    assert c.get("/mappings/sources/bob@d.tld?type=group").json() == ["team@d.tld"]
    assert c.get("/mappings/sources/bob@d.tld?type=Alias").json() == ["robert@d.tld"]
    assert error(c.get("/mappings/sources/bob@d.tld"))["statusCode"] == 400
    assert error(c.get("/mappings/sources/bob@d.tld?type=nonsense"))["statusCode"] == 400
    assert error(c.get("/mappings/sources/bob@d.tld?type=regex"))["statusCode"] == 400
    assert c.delete("/mappings/sources/bob@d.tld?type=group").status_code == 204
    assert "team@d.tld" not in c.get("/mappings").json()


def test_bulk_import_is_all_or_nothing(setup, ctx):
    c = setup
    bad = {"a@d.tld": [{"type": "Forward", "mapping": "x@ext.tld"}], "b@d.tld": [{"type": "Group", "mapping": "??"}]}
    assert error(c.put("/mappings", json=bad))["statusCode"] == 400
    assert ctx.rrt.get_all_mappings() == {}
    good = {"a@d.tld": [{"type": "Forward", "mapping": "x@ext.tld"}], "e.tld": [{"type": "Domain", "mapping": "d.tld"}]}
    assert c.put("/mappings", json=good).status_code == 204
    assert c.get("/mappings").json() == good
