"""``/docs`` works offline: Swagger UI's assets come from this server, the page names no outside host."""

from __future__ import annotations

import re
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.webadmin.app import create_app
from mailserver.webadmin.server import ServerConfig
from tests.unit.webadmin.webadmin_support import FULL, make_context

# Any absolute or protocol-relative address: the browser would fetch it from elsewhere.
OUTSIDE = re.compile(r"""(?:https?:)?//[\w.-]+""")
REFERENCES = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']""")


def test_the_docs_page_references_no_outside_host_and_its_assets_are_served(anonymous):
    page = anonymous.get("/docs")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert OUTSIDE.findall(page.text) == []
    assert '"validatorUrl": null' in page.text   # Swagger UI's badge would call its online validator
    references = REFERENCES.findall(page.text)
    assert {r.rsplit("/", 1)[1] for r in references} >= {"swagger-ui-bundle.js", "swagger-ui.css"}
    for reference in references:   # fetched by the browser without credentials
        asset = anonymous.get(reference)
        assert asset.status_code == 200 and len(asset.content) > 0, reference
    assert "SwaggerUIBundle" in anonymous.get("/docs/assets/swagger-ui-bundle.js").text
    assert anonymous.get("/openapi.json").json()["openapi"].startswith("3.1")   # what Swagger UI 5 renders


def test_redoc_which_would_need_a_cdn_is_not_served(client):
    assert client.get("/redoc").status_code == 404


def test_docs_can_be_turned_off():
    config = ServerConfig.from_env({"MAILSERVER_WEBADMIN_PASSWORD": FULL, "MAILSERVER_WEBADMIN_DOCS": "false"})
    app = create_app(make_context(docs=config.docs))
    client = TestClient(app, raise_server_exceptions=False)
    assert client.get("/docs").status_code == 404
    assert client.get("/docs/assets/swagger-ui-bundle.js").status_code in (401, 404)
    assert ServerConfig.from_env({"MAILSERVER_WEBADMIN_PASSWORD": FULL}).docs is True
