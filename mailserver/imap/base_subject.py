"""The base subject of RFC 5256 section 2.1: the subject without its "Re:", "Fwd:", "[tag]",
"(fwd)" and "[fwd: ...]" decorations, what SORT SUBJECT and THREAD group and order by.

Why a hand-written scanner and not a regular expression: the leader grammar
(``*subj-blob subj-refwd``) run as a backtracking regex is quadratic or worse on a hostile subject
of many ``[`` blobs. The scanner works on a window ``[start, end)`` of the subject, only ever
narrows it, and rescans a failed blob run at most twice, so it is linear in the subject's length.

``mailserver.search.document.base_subject`` is another: it copies James's ``SearchUtil`` for the
OpenSearch document, quirks included, where this one is the RFC's for IMAP.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.header import decode_header, make_header

_WHITE_SPACE = re.compile(r"[ \t\r\n]+")   # one character class: no backtracking
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


@dataclass(frozen=True)
class BaseSubject:
    text: str          # the base subject, case kept
    is_reply: bool     # a subj-refwd, "(fwd)" trailer or "[fwd: ...]" was removed (THREAD REFERENCES 5.B)

    @property
    def key(self) -> str:
        """What compares: i;ascii-casemap (ASCII letters folded, other characters by code point,
        which is the order of their UTF-8 octets)."""
        return casemap(self.text)


def casemap(text: str) -> str:
    return text.translate(_ASCII_UPPER)


def base_subject(raw: str | None) -> BaseSubject:
    """``raw``: the Subject header's value as stored (encoded words and folding included)."""
    text = _normalized(raw or "")
    lower = text.translate(_ASCII_LOWER)   # same length as text: indexes are shared
    start, end, is_reply = 0, len(text), False
    while True:
        end, forwarded = _strip_trailers(lower, start, end)           # step 2
        start, replied = _strip_leaders(lower, start, end)            # steps 3, 4, 5
        is_reply = is_reply or forwarded or replied
        if end - start >= 6 and lower.startswith("[fwd:", start) and lower[end - 1] == "]":   # step 6
            start, end, is_reply = start + 5, end - 1, True
            continue
        return BaseSubject(text[start:end], is_reply)


def _normalized(raw: str) -> str:
    """Step 1: encoded words decoded, folding and tabs made spaces, runs of spaces made one."""
    try:
        decoded = str(make_header(decode_header(raw)))
    except (ValueError, LookupError, UnicodeDecodeError):
        decoded = raw
    return _WHITE_SPACE.sub(" ", decoded)


def _strip_trailers(lower: str, start: int, end: int) -> tuple[int, bool]:
    """subj-trailer = "(fwd)" / WSP, removed from the end as long as one is there."""
    forwarded = False
    while end > start:
        if lower[end - 1] == " ":
            end -= 1
        elif end - start >= 5 and lower.endswith("(fwd)", start, end):
            end -= 5
            forwarded = True
        else:
            break
    return end, forwarded


def _blob_end(lower: str, at: int, end: int) -> int | None:
    """The end of the subj-blob (``"[" *BLOBCHAR "]" *WSP``) starting at ``at``, if one does."""
    if at >= end or lower[at] != "[":
        return None
    opening = lower.find("[", at + 1, end)   # BLOBCHAR excludes "[": the search stops there, not at the far end
    close = lower.find("]", at + 1, opening if opening >= 0 else end)
    if close < 0:
        return None
    at = close + 1
    while at < end and lower[at] == " ":
        at += 1
    return at


def _refwd_end(lower: str, at: int, end: int) -> int | None:
    """The end of the subj-refwd (``("re" / "fw" ["d"]) *WSP [subj-blob] ":"``) at ``at``, if any."""
    if lower.startswith("re", at, end):
        at += 2
    elif lower.startswith("fw", at, end):
        at += 3 if lower.startswith("fwd", at, end) else 2
    else:
        return None
    while at < end and lower[at] == " ":
        at += 1
    blob = _blob_end(lower, at, end)
    if blob is not None:
        at = blob
    return at + 1 if at < end and lower[at] == ":" else None


def _strip_leaders(lower: str, start: int, end: int) -> tuple[int, bool]:
    """Steps 3 to 5: remove subj-leaders (WSP, or blobs then a subj-refwd) and leading blobs that
    leave something behind, until neither applies. A run of blobs not followed by a subj-refwd is
    removed whole when text follows it (step 4 once per blob, step 3 failing in between), else all
    of it but its last blob."""
    replied = False
    while start < end:
        if lower[start] == " ":
            start += 1
            continue
        run_end, last_blob = start, None
        while (after := _blob_end(lower, run_end, end)) is not None:
            last_blob, run_end = run_end, after
        refwd = _refwd_end(lower, run_end, end)
        if refwd is not None:
            start, replied = refwd, True
            continue
        if last_blob is None:
            break
        if run_end < end:        # text follows the blobs: every blob goes
            start = run_end
            continue
        start = last_blob        # the subject is only blobs: the last one stays
        break
    return start, replied
