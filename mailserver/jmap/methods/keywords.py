"""Keywords (RFC 8621 4.1.1) are IMAP flags: ``$seen`` is ``\\Seen`` and so on; other keywords are
user flags. ``\\Recent`` and ``\\Deleted`` have no keyword and are kept as they are by updates."""

from __future__ import annotations

from collections.abc import Mapping

from mailserver.model.flags import Flags, SystemFlag

SYSTEM_KEYWORDS: dict[str, SystemFlag] = {
    "$seen": SystemFlag.SEEN,
    "$flagged": SystemFlag.FLAGGED,
    "$answered": SystemFlag.ANSWERED,
    "$draft": SystemFlag.DRAFT,
}
KEYWORD_OF = {flag: keyword for keyword, flag in SYSTEM_KEYWORDS.items()}
NOT_KEYWORDS = frozenset({SystemFlag.RECENT, SystemFlag.DELETED})
# RFC 8621 4.1.1: IMAP atom characters, none of ( ) { ] % * " \ nor controls and space.
FORBIDDEN = frozenset('(){]%*"\\')


def keywords_of(flags: Flags) -> dict[str, bool]:
    keywords = {KEYWORD_OF[f]: True for f in flags.system if f in KEYWORD_OF}
    keywords.update({flag.lower(): True for flag in flags.user})
    return dict(sorted(keywords.items()))


def is_valid_keyword(keyword: str) -> bool:
    return 0 < len(keyword) <= 255 and all(33 <= ord(c) < 127 and c not in FORBIDDEN for c in keyword)


def flags_with_keywords(current: Flags, keywords: Mapping[str, bool]) -> Flags:
    """The flags a message gets when its keywords become ``keywords`` (the flags without keyword stay)."""
    wanted = {k.lower() for k, on in keywords.items() if on}
    system = {flag for flag in current.system if flag in NOT_KEYWORDS}
    system |= {SYSTEM_KEYWORDS[k] for k in wanted if k in SYSTEM_KEYWORDS}
    return Flags(frozenset(system), frozenset(k for k in wanted if k not in SYSTEM_KEYWORDS))
