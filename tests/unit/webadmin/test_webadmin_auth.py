"""Authentication: the password tiers, JWT, public paths, plain-text bodies, secure default."""

from __future__ import annotations

import time
import warnings

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.webadmin.app import create_app
from mailserver.webadmin.auth import AuthConfig, AuthConfigError, AuthMode
from tests.unit.webadmin.webadmin_support import FULL, NODELETE, READONLY, make_context


def client_with(app, **headers) -> TestClient:
    return TestClient(app, headers=headers, raise_server_exceptions=False)


@pytest.mark.parametrize(("secret", "method", "path", "expected"), [
    (FULL, "PUT", "/domains/a.tld", 204),
    (FULL, "DELETE", "/domains/a.tld", 204),
    (NODELETE, "PUT", "/domains/a.tld", 204),
    (NODELETE, "DELETE", "/domains/a.tld", 403),
    (READONLY, "GET", "/domains", 200),
    (READONLY, "PUT", "/domains/a.tld", 403),
    (READONLY, "DELETE", "/domains/a.tld", 403),
])
def test_password_tiers(app, secret, method, path, expected):
    response = client_with(app, Password=secret).request(method, path)
    assert response.status_code == expected
    if expected == 403:
        assert response.text == "Insufficient permissions for this operation."
        assert response.headers["content-type"].startswith("text/plain")


def test_readonly_may_head(app, ctx):
    ctx.domains.add("d.tld")
    assert client_with(app, Password=READONLY).head("/users/nobody@d.tld").status_code == 404


def test_refused_writes_change_nothing(app, ctx):
    client_with(app, Password=READONLY).put("/domains/a.tld")
    client_with(app, Password=NODELETE).put("/domains/b.tld")
    client_with(app, Password=NODELETE).delete("/domains/b.tld")
    assert [d.name for d in ctx.domains.list()] == ["b.tld"]


def test_missing_and_wrong_password_are_plain_text_401(anonymous, app):
    missing = anonymous.get("/domains")
    assert (missing.status_code, missing.text) == (401, "No Password in header.")
    wrong = client_with(app, Password="nope").get("/domains")
    assert (wrong.status_code, wrong.text) == (401, "Wrong password.")


def test_bearer_is_accepted_in_password_mode(app):
    assert client_with(app, Authorization=f"Bearer {FULL}").get("/domains").status_code == 200


@pytest.mark.parametrize("path", ["/healthcheck", "/healthcheck/checks", "/healthcheck/checks/MaintenanceMode",
                                  "/metrics", "/openapi.json", "/docs"])
def test_public_paths(anonymous, path):
    assert anonymous.get(path).status_code == 200


def test_unknown_route_needs_auth_first(anonymous):
    assert anonymous.get("/nope").status_code == 401


# -- JWT --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def rsa_keys():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return key, public


@pytest.fixture
def jwt_app(rsa_keys):
    return create_app(make_context(AuthConfig.jwt(rsa_keys[1])))


def token(key, **claims) -> str:
    return jwt.encode({"sub": "admin@d.tld", "exp": int(time.time()) + 60, **claims}, key, algorithm="RS256")


def test_jwt_admin_token(jwt_app, rsa_keys):
    c = client_with(jwt_app, Authorization=f"Bearer {token(rsa_keys[0], admin=True)}")
    assert c.put("/domains/j.tld").status_code == 204
    assert c.put("/maintenance", json={}).json()["updatedBy"] == "admin@d.tld"


@pytest.mark.parametrize(("headers", "body"), [
    ({}, "No Bearer header."),
    ({"Authorization": "Bearer not-a-jwt"}, "Invalid Bearer header."),
    ({"Password": "whatever"}, "No Bearer header."),
])
def test_jwt_refusals(jwt_app, headers, body):
    response = client_with(jwt_app, **headers).get("/domains")
    assert (response.status_code, response.text) == (401, body)


def test_jwt_without_admin_claim(jwt_app, rsa_keys):
    for claims in ({}, {"admin": False}, {"admin": "true"}):
        response = client_with(jwt_app, Authorization=f"Bearer {token(rsa_keys[0], **claims)}").get("/domains")
        assert (response.status_code, response.text) == (401, "Non authorized user.")


def test_jwt_expired_or_foreign_key(jwt_app, rsa_keys):
    expired = token(rsa_keys[0], admin=True, exp=int(time.time()) - 10)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for t in (expired, token(other, admin=True)):
        response = client_with(jwt_app, Authorization=f"Bearer {t}").get("/domains")
        assert (response.status_code, response.text) == (401, "Invalid Bearer header.")
        assert response.headers["content-type"].startswith("text/plain")


def test_jwt_hs256_with_public_key_as_secret_is_refused(jwt_app, rsa_keys):
    # The classic algorithm-confusion attack: only RS256 is accepted.
    forged = jwt.encode({"sub": "x", "admin": True}, "secret-from-somewhere-long-enough-for-hs256", algorithm="HS256")
    assert client_with(jwt_app, Authorization=f"Bearer {forged}").get("/domains").status_code == 401


# -- configuration ----------------------------------------------------------------------------
def test_no_auth_configured_refuses_to_start():
    with pytest.raises(AuthConfigError):
        AuthConfig.from_env({})


def test_auth_from_env(tmp_path, rsa_keys):
    assert AuthConfig.from_env({"MAILSERVER_WEBADMIN_AUTH": "disabled"}).mode is AuthMode.NONE
    pw = AuthConfig.from_env({"MAILSERVER_WEBADMIN_PASSWORD": "a, b", "MAILSERVER_WEBADMIN_PASSWORD_READONLY": "r"})
    assert (pw.mode, pw.passwords, pw.readonly_passwords) == (AuthMode.PASSWORD, ("a", "b"), ("r",))
    pem = tmp_path / "key.pem"
    pem.write_text(rsa_keys[1])
    assert AuthConfig.from_env({"MAILSERVER_WEBADMIN_JWT_PUBLIC_KEY": str(pem)}).jwt_public_key == rsa_keys[1]
    # JWT wins over passwords, as James's selection order.
    both = AuthConfig.from_env({"MAILSERVER_WEBADMIN_JWT_PUBLIC_KEY": rsa_keys[1], "MAILSERVER_WEBADMIN_PASSWORD": "a"})
    assert both.mode is AuthMode.JWT


def test_disabled_auth_lets_everyone_in():
    app = create_app(make_context(AuthConfig.disabled()))
    assert client_with(app).put("/domains/open.tld").status_code == 204


def test_server_config_defaults_to_loopback():
    from mailserver.webadmin.server import ServerConfig

    config = ServerConfig.from_env({"MAILSERVER_WEBADMIN_PASSWORD": "x"})
    assert (config.host, config.port) == ("127.0.0.1", 8000)
