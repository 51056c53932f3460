"""``/docs``: Swagger UI served with its own assets, so the page works with no outside request.

FastAPI's default page loads Swagger UI's scripts and styles from a public CDN and its favicon
from FastAPI's site: on an admin network without Internet access the page stays blank. Here the
assets come from the ``swagger-ui-bundle-v2`` package (Swagger UI's ``swagger-ui-dist`` files,
version 5, which renders the OpenAPI 3.1 document FastAPI writes), served under ``/docs/assets``
(FastAPI's documented "self-hosting JavaScript and CSS for docs"). Swagger UI's online validator
badge is turned off: it would send the document's address to an outside service. ReDoc, which has
no packaged assets here, is not served. ``enabled=False`` serves no page at all.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

DOCS = "/docs"
ASSETS = "/docs/assets"
OAUTH2_REDIRECT = "/docs/oauth2-redirect"


def install(app: FastAPI, *, enabled: bool = True) -> None:
    """Serve ``/docs`` on an app built with ``docs_url=None`` and ``redoc_url=None``."""
    if not enabled:
        return
    from swagger_ui_bundle import swagger_ui_path  # imported only when served

    app.mount(ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="swagger-ui-assets")

    @app.get(DOCS, include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js", swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon-32x32.png", oauth2_redirect_url=OAUTH2_REDIRECT,
            swagger_ui_parameters={"validatorUrl": None})

    @app.get(OAUTH2_REDIRECT, include_in_schema=False)
    def oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()
