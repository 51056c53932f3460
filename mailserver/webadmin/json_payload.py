"""The JSON document of a request body, refused in James's words (``JsonExtractor``: 400
``JSON payload of the request is not valid``) when it does not parse or is not an object."""

from __future__ import annotations

import json
from typing import Any

from mailserver.webadmin.errors import bad_request

INVALID_JSON = "JSON payload of the request is not valid"


def json_document(body: bytes) -> Any:
    """The parsed body (an empty one is ``null``)."""
    try:
        return json.loads(body or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise bad_request(str(exc), INVALID_JSON) from exc


def json_object(body: bytes) -> dict[str, Any]:
    document = json_document(body)
    if not isinstance(document, dict):
        raise bad_request("a JSON object is expected", INVALID_JSON)
    return document
