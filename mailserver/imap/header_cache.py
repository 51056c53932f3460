"""Message headers this IMAP server read lately, kept in memory, by header blob id.

Why: a client's message list (``FETCH n:* (ENVELOPE)``, asked again at every refresh) read each
listed message's header blob from the blob store each time; these GETs were most of a FETCH's
cost on S3.

Why it is safe: a blob id never names other content (it is the content's hash, or a fresh random
id), so a cached header is the header. A message expunged and its blob deleted may still have its
header served while the session has not yet been told of the expunge, which RFC 3501 allows
(section 7.4.1: a server may return the data of a message expunged meanwhile).

The ENVELOPE rendered from a header is kept too, by the same key: parsing the header and its
address lists again at every ``FETCH (ENVELOPE)`` was most of that command's CPU.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from cachetools import LRUCache

from mailserver.model.message import MessageMetadata

DEFAULT_BYTES = 8 * 1024 * 1024


class HeaderCache:
    def __init__(self, max_bytes: int = DEFAULT_BYTES) -> None:
        self._headers: LRUCache[str, bytes] = LRUCache(maxsize=max_bytes, getsizeof=len)
        self._envelopes: LRUCache[str, bytes] = LRUCache(maxsize=max_bytes // 4, getsizeof=len)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def reader(self, read_header: Callable[[MessageMetadata], bytes]) -> Callable[[MessageMetadata], bytes]:
        """``read_header`` (the mailbox manager's), through the cache."""
        def read(message: MessageMetadata) -> bytes:
            key = str(message.header_blob_id)
            with self._lock:
                header = self._headers.get(key)
                if header is not None:
                    self.hits += 1
                    return header
                self.misses += 1
            header = read_header(message)
            if len(header) <= self._headers.maxsize:
                with self._lock:
                    self._headers[key] = header
            return header
        return read

    def envelope(self, message: MessageMetadata, render: Callable[[], bytes]) -> bytes:
        """The message's ENVELOPE, ``render``ed once per header blob."""
        key = str(message.header_blob_id)
        with self._lock:
            cached = self._envelopes.get(key)
        if cached is not None:
            return cached
        rendered = render()
        if len(rendered) <= self._envelopes.maxsize:
            with self._lock:
                self._envelopes[key] = rendered
        return rendered
