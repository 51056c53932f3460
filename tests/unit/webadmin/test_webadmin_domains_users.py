"""``/domains`` and ``/users``: James's shapes and status codes, errors in James's JSON body."""

from __future__ import annotations

from tests.unit.webadmin.webadmin_support import error


def test_domains_lifecycle(client, ctx):
    assert client.get("/domains").json() == []
    assert client.put("/domains/B.tld").status_code == 204
    assert client.put("/domains/b.tld").status_code == 204   # idempotent, as James
    assert client.put("/domains/a.tld").status_code == 204
    assert client.get("/domains").json() == ["a.tld", "b.tld"]
    assert client.get("/domains/a.tld").status_code == 204
    assert client.delete("/domains/a.tld").status_code == 204
    assert client.delete("/domains/a.tld").status_code == 204   # absent: still 204
    body = error(client.get("/domains/a.tld"))
    assert (body["type"], body["statusCode"]) == ("notFound", 404)


def test_invalid_domains_are_400(client, ctx):
    for bad in ("a@b.tld", "-bad-.tld", "x" * 256):
        body = error(client.put(f"/domains/{bad}"))
        assert body["type"] == "InvalidArgument"
        assert body["message"] == "Invalid arguments supplied in the user request"
    assert ctx.domains.list() == []


def test_domain_aliases(client):
    client.put("/domains/d.tld")
    assert client.put("/domains/d.tld/aliases/alias.tld").status_code == 204
    assert client.get("/domains/d.tld/aliases").json() == [{"source": "alias.tld"}]
    assert error(client.put("/domains/d.tld/aliases/d.tld"))["statusCode"] == 400
    assert error(client.put("/domains/unknown.tld/aliases/alias.tld"))["statusCode"] == 404
    assert client.delete("/domains/d.tld/aliases/alias.tld").status_code == 204
    assert client.get("/domains/d.tld/aliases").json() == []


def test_users_lifecycle(client, ctx):
    client.put("/domains/d.tld")
    assert client.put("/users/Bob@d.tld", json={"password": "secret"}).status_code == 204
    assert client.get("/users").json() == [{"username": "bob@d.tld"}]
    assert client.head("/users/bob@d.tld").status_code == 200
    assert client.head("/users/alice@d.tld").status_code == 404
    assert client.head("/users/bad name@d.tld").status_code == 400
    body = error(client.put("/users/bob@d.tld", json={"password": "other"}))
    assert (body["statusCode"], body["type"]) == (409, "WrongState")
    assert ctx.users.verify("bob@d.tld", "secret")
    assert client.put("/users/bob@d.tld?force", json={"password": "other"}).status_code == 204
    assert ctx.users.verify("bob@d.tld", "other")
    assert client.put("/users/new@d.tld?force", json={"password": "pw"}).status_code == 204   # upsert creates
    assert client.post("/users/bob@d.tld/verify", json={"password": "other"}).status_code == 204
    assert client.post("/users/bob@d.tld/verify", json={"password": "wrong"}).status_code == 401
    assert client.post("/users/ghost@d.tld/verify", json={"password": "wrong"}).status_code == 401
    assert client.delete("/users/bob@d.tld").status_code == 204
    assert client.delete("/users/bob@d.tld").status_code == 204
    assert client.get("/users").json() == [{"username": "new@d.tld"}]


def test_user_creation_errors_are_400_without_writes(client, ctx):
    client.put("/domains/d.tld")
    cases = [
        ("/users/bob@unknown.tld", {"json": {"password": "x"}}),        # domain not local
        ("/users/bob", {"json": {"password": "x"}}),                    # virtual hosting needs a domain
        ("/users/bob@d.tld", {"json": {"password": ""}}),                # empty password
        ("/users/bob@d.tld", {"json": {"password": 42}}),                # not a string
        ("/users/bob@d.tld", {"json": {"pass": "x"}}),                   # wrong field
        ("/users/bob@d.tld", {"json": ["x"]}),                           # not an object
    ]
    for path, kwargs in cases:
        body = error(client.put(path, **kwargs))
        assert body["type"] == "InvalidArgument", (path, kwargs, body)
    assert list(ctx.users.list_users()) == []


def test_unparsable_json_is_400_with_james_message(client):
    client.put("/domains/d.tld")
    response = client.put("/users/bob@d.tld", content=b"{not json", headers={"Content-Type": "application/json"})
    body = error(response)
    assert (body["statusCode"], body["message"]) == (400, "JSON payload of the request is not valid")


def test_allowed_from_headers(client):
    client.put("/domains/d.tld")
    client.put("/users/bob@d.tld", json={"password": "x"})
    client.put("/address/aliases/bob@d.tld/sources/robert@d.tld")
    assert client.get("/users/bob@d.tld/allowedFromHeaders").json() == ["bob@d.tld", "robert@d.tld"]
    assert error(client.get("/users/ghost@d.tld/allowedFromHeaders"))["statusCode"] == 404


def test_unknown_route_and_method(client):
    body = error(client.get("/nope"))
    assert (body["type"], body["message"]) == ("notFound", "GET /nope can not be found")
    assert error(client.post("/domains"))["statusCode"] == 404


def test_unexpected_errors_are_500_server_error(client, ctx, monkeypatch):
    def boom():
        raise RuntimeError("backend exploded")

    monkeypatch.setattr(ctx.domains, "list", boom)
    body = error(client.get("/domains"))
    assert (body["statusCode"], body["type"]) == (500, "ServerError")
    assert body["message"] == "WebAdmin encountered an unexpected internal error"
    assert "backend exploded" in body["details"]


def test_openapi_lists_the_routes(anonymous):
    paths = anonymous.get("/openapi.json").json()["paths"]
    for p in ("/domains/{domain}", "/users/{username}", "/address/groups/{group}/{member}", "/mappings",
              "/healthcheck", "/maintenance", "/domainMappings/{source}"):
        assert p in paths


def test_json_body_is_read_whatever_the_content_type_says(client, ctx):
    # `curl -d '{...}'` sends application/x-www-form-urlencoded; James reads the body as JSON anyway.
    client.put("/domains/d.tld")
    response = client.put("/users/carol@d.tld", content=b'{"password": "pw"}',
                          headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert response.status_code == 204
    assert ctx.users.verify("carol@d.tld", "pw")
    no_type = client.put("/users/dan@d.tld?force", content=b'{"password": "pw2"}', headers={"Content-Type": ""})
    assert no_type.status_code == 204 and ctx.users.verify("dan@d.tld", "pw2")
