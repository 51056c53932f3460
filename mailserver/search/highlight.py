"""Highlighting in memory, as OpenSearch's plain highlighter answers James's snippet searches: the
words a field's text criteria looked for, each wrapped in ``<mark>``, in a fragment of about
``FRAGMENT_SIZE`` characters around the first one, the rest HTML-escaped."""

from __future__ import annotations

import re
from collections.abc import Callable
from operator import attrgetter

from mailserver.search.api import FRAGMENT_SIZE, HIGHLIGHT_POST, HIGHLIGHT_PRE, SearchQuery

_WORD = re.compile(r"\w+(?:['.\u2019]\w+)*")
# Lucene's SimpleHTMLEncoder, OpenSearch's "html" highlight encoder
_ENCODED = str.maketrans({'"': "&quot;", "&": "&amp;", "<": "&lt;", ">": "&gt;", "'": "&#x27;", "/": "&#x2F;"})

# The text criteria whose words are highlighted in each field (OpenSearch matches fields one by one).
SUBJECT: Callable[[SearchQuery], str | None] = attrgetter("subject")
BODY: Callable[[SearchQuery], str | None] = attrgetter("body")
ATTACHMENT_TEXT: Callable[[SearchQuery], str | None] = attrgetter("attachment_text")


def searched_words(query: SearchQuery, criterion: Callable[[SearchQuery], str | None]) -> set[str]:
    """The lower-cased words ``criterion`` looks for in ``query`` and the queries it must or may
    hold with (never those under ``none_of``: what must not match is not highlighted)."""
    value = criterion(query)
    words = {w.lower() for w in _WORD.findall(value)} if value else set()
    for nested in (*query.all_of, *query.any_of):
        words |= searched_words(nested, criterion)
    return words


def mark(text: str | None, words: set[str]) -> str | None:
    """A fragment of ``text`` with ``words`` marked, or None when none of them is in it."""
    if not text or not words:
        return None
    found = [m for m in _WORD.finditer(text) if m.group(0).lower() in words]
    if not found:
        return None
    start = (found[0].start() // FRAGMENT_SIZE) * FRAGMENT_SIZE
    while start > 0 and not text[start - 1].isspace():   # a fragment starts at a word
        start -= 1
    end = start + FRAGMENT_SIZE
    while end < len(text) and not text[end].isspace():   # and ends after one
        end += 1
    pieces, at = [], start
    for match in found:
        if match.start() < start or match.end() > end:
            continue
        pieces += [_encoded(text[at:match.start()]), HIGHLIGHT_PRE, _encoded(match.group(0)), HIGHLIGHT_POST]
        at = match.end()
    pieces.append(_encoded(text[at:end]))
    return "".join(pieces).strip()


def _encoded(text: str) -> str:
    return text.translate(_ENCODED)
