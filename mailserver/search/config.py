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
Malformed values raise ``ValueError`` naming the variable; each variable is read, typed and described
in ``mailserver.settings.backends`` (docs/configuration.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_INDEX = "mailbox_v1"
DEFAULT_READ_ALIAS = "mailboxReadAlias"
DEFAULT_WRITE_ALIAS = "mailboxWriteAlias"
DEFAULT_STATE_INDEX = "mailserver_search_state"


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
        from mailserver.settings import OpenSearchSettings  # here: Spark executors import this module without it

        s = OpenSearchSettings.from_env(env)
        urls = tuple(u.strip().rstrip("/") for u in (s.url or "").split(",") if u.strip())
        if not urls:
            return None
        for url in urls:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"OPENSEARCH_URL: {url!r} is not an http(s) URL")
        names = {
            "index_name": s.index_mailbox_name or s.index_name or DEFAULT_INDEX,
            "read_alias": s.alias_read_mailbox_name or s.alias_read_name or DEFAULT_READ_ALIAS,
            "write_alias": s.alias_write_mailbox_name or s.alias_write_name or DEFAULT_WRITE_ALIAS,
            "state_index": s.state_index,
        }
        for key, value in names.items():
            check_index_name(value, key, alias=key.endswith("alias"))
        if names["read_alias"] == names["write_alias"]:
            raise ValueError("OPENSEARCH_ALIAS_READ_MAILBOX_NAME and OPENSEARCH_ALIAS_WRITE_MAILBOX_NAME must differ")
        return cls(
            urls=urls, **names,
            shards=s.shards, replicas=s.replicas, wait_for_active_shards=s.wait_for_active_shards,
            documents=DocumentOptions(index_attachments=s.index_attachments, index_headers=s.index_headers,
                                      index_body=s.index_body, index_user=s.index_user),
            timeout=s.request_timeout.total_seconds(),
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
