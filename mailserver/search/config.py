"""Search settings from the environment, with James's defaults (``opensearch.properties``).

| variable | James key | default |
|---|---|---|
| ``OPENSEARCH_URL`` | ``opensearch.hosts`` | unset: no search (comma list of URLs) |
| ``OPENSEARCH_INDEX_MAILBOX_NAME`` | ``opensearch.index.mailbox.name`` | ``mailbox_v1`` |
| ``OPENSEARCH_ALIAS_READ_MAILBOX_NAME`` | ``opensearch.alias.read.mailbox.name`` | ``mailboxReadAlias`` |
| ``OPENSEARCH_ALIAS_WRITE_MAILBOX_NAME`` | ``opensearch.alias.write.mailbox.name`` | ``mailboxWriteAlias`` |
| ``OPENSEARCH_NB_SHARDS`` | ``opensearch.nb.shards`` | 5 |
| ``OPENSEARCH_NB_REPLICA`` | ``opensearch.nb.replica`` | 1 |
| ``OPENSEARCH_INDEX_WAIT_FOR_ACTIVE_SHARDS`` | ``opensearch.index.waitForActiveShards`` | 1 |
| ``OPENSEARCH_INDEX_ATTACHMENTS`` | ``opensearch.indexAttachments`` | true |
| ``OPENSEARCH_INDEX_HEADERS`` | ``opensearch.indexHeaders`` | true |
| ``OPENSEARCH_INDEX_BODY`` | ``opensearch.indexBody`` | true |
| ``OPENSEARCH_INDEX_USER`` | ``opensearch.indexUser`` | **true** (James: false) |
| ``OPENSEARCH_REQUEST_TIMEOUT_SECONDS`` | ``opensearch.request.timeout`` | 30 |
| ``OPENSEARCH_STATE_INDEX`` | (ours) | ``mailserver_search_state`` |

The legacy James keys without ``mailbox`` (``opensearch.index.name`` ...) are the fallbacks
``OPENSEARCH_INDEX_NAME``, ``OPENSEARCH_ALIAS_READ_NAME`` and ``OPENSEARCH_ALIAS_WRITE_NAME``.
Malformed values raise ``ValueError`` naming the variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_INDEX = "mailbox_v1"
DEFAULT_READ_ALIAS = "mailboxReadAlias"
DEFAULT_WRITE_ALIAS = "mailboxWriteAlias"
DEFAULT_STATE_INDEX = "mailserver_search_state"
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


@dataclass(frozen=True)
class DocumentOptions:
    """What a document holds (James's IndexAttachments, IndexHeaders, IndexBody, IndexUser)."""

    index_attachments: bool = True
    index_headers: bool = True
    index_body: bool = True
    index_user: bool = True


DEFAULT_DOCUMENT_OPTIONS = DocumentOptions()


@dataclass(frozen=True)
class SearchConfig:
    urls: tuple[str, ...] = ("http://127.0.0.1:9200",)
    index_name: str = DEFAULT_INDEX
    read_alias: str = DEFAULT_READ_ALIAS
    write_alias: str = DEFAULT_WRITE_ALIAS
    shards: int = 5
    replicas: int = 1
    wait_for_active_shards: int = 1
    documents: DocumentOptions = DEFAULT_DOCUMENT_OPTIONS
    timeout: float = 30.0
    state_index: str = DEFAULT_STATE_INDEX

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SearchConfig | None:
        """The configuration, or None when ``OPENSEARCH_URL`` is unset (the server runs without search)."""
        env = os.environ if env is None else env

        def text(*names: str, default: str) -> str:
            for name in names:
                value = env.get(name, "").strip()
                if value:
                    return value
            return default

        def integer(name: str, default: int, minimum: int) -> int:
            raw = env.get(name, "").strip()
            if not raw:
                return default
            try:
                value = int(raw)
            except ValueError:
                raise ValueError(f"{name}: {raw!r} is not an integer") from None
            if value < minimum:
                raise ValueError(f"{name}: must be at least {minimum}, got {value}")
            return value

        def boolean(name: str, default: bool) -> bool:
            raw = env.get(name, "").strip().lower()
            if not raw:
                return default
            if raw in _TRUE or raw in _FALSE:
                return raw in _TRUE
            raise ValueError(f"{name}: {raw!r} is not a boolean (true/false)")

        urls = tuple(u.strip().rstrip("/") for u in env.get("OPENSEARCH_URL", "").split(",") if u.strip())
        if not urls:
            return None
        for url in urls:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"OPENSEARCH_URL: {url!r} is not an http(s) URL")
        names = {
            "index_name": text("OPENSEARCH_INDEX_MAILBOX_NAME", "OPENSEARCH_INDEX_NAME", default=DEFAULT_INDEX),
            "read_alias": text("OPENSEARCH_ALIAS_READ_MAILBOX_NAME", "OPENSEARCH_ALIAS_READ_NAME",
                               default=DEFAULT_READ_ALIAS),
            "write_alias": text("OPENSEARCH_ALIAS_WRITE_MAILBOX_NAME", "OPENSEARCH_ALIAS_WRITE_NAME",
                                default=DEFAULT_WRITE_ALIAS),
            "state_index": text("OPENSEARCH_STATE_INDEX", default=DEFAULT_STATE_INDEX),
        }
        for key, value in names.items():
            check_index_name(value, key, alias=key.endswith("alias"))
        if names["read_alias"] == names["write_alias"]:
            raise ValueError("OPENSEARCH_ALIAS_READ_MAILBOX_NAME and OPENSEARCH_ALIAS_WRITE_MAILBOX_NAME must differ")
        return cls(
            urls=urls, **names,
            shards=integer("OPENSEARCH_NB_SHARDS", 5, 1),
            replicas=integer("OPENSEARCH_NB_REPLICA", 1, 0),
            wait_for_active_shards=integer("OPENSEARCH_INDEX_WAIT_FOR_ACTIVE_SHARDS", 1, 0),
            documents=DocumentOptions(index_attachments=boolean("OPENSEARCH_INDEX_ATTACHMENTS", True),
                                      index_headers=boolean("OPENSEARCH_INDEX_HEADERS", True),
                                      index_body=boolean("OPENSEARCH_INDEX_BODY", True),
                                      index_user=boolean("OPENSEARCH_INDEX_USER", True)),
            timeout=float(integer("OPENSEARCH_REQUEST_TIMEOUT_SECONDS", 30, 1)),
        )


_FORBIDDEN = set('\\/*?"<>| ,#:')


def check_index_name(name: str, what: str = "index name", *, alias: bool = False) -> str:
    """OpenSearch's rules for index names (lower case) and alias names (James's are camel case)."""
    if (not name or name in (".", "..") or name.startswith(("-", "_", "+"))
            or any(c in _FORBIDDEN for c in name) or len(name.encode()) > 255
            or (not alias and name != name.lower())):
        kind = "alias" if alias else "index"
        raise ValueError(f"{what}: {name!r} is not a valid OpenSearch {kind} name")
    return name
