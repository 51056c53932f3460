"""LIST's arguments, basic (RFC 3501) or extended (RFC 5258 LIST-EXTENDED, RFC 6154 SPECIAL-USE,
RFC 5819 LIST-STATUS)::

    LIST [(select-opts)] reference (pattern | (pattern ...)) [RETURN (return-opts)]

Selection options: SUBSCRIBED, REMOTE (there are no remote mailboxes: it filters nothing),
RECURSIVEMATCH (only with another selection option, RFC 5258 3.1), SPECIAL-USE. Return options:
SUBSCRIBED, CHILDREN (children are always reported), SPECIAL-USE, STATUS (items). Selecting
SUBSCRIBED or SPECIAL-USE implies returning it (RFC 5258 3.1, RFC 6154 5.1). Anything else is
refused with BAD, as both RFCs require; MYRIGHTS too, this server has no ACL.

Only parsing here: the option lists and the patterns are counted before anything is decoded.
"""

from __future__ import annotations

from dataclasses import dataclass

from mailserver.imap.names import InvalidName, decode_mutf7
from mailserver.imap.parser import Args, Atom, Literal, ParseError, Token
from mailserver.imap.status_items import parse_status_items

SELECT_OPTIONS = frozenset({"SUBSCRIBED", "REMOTE", "RECURSIVEMATCH", "SPECIAL-USE"})
RETURN_OPTIONS = frozenset({"SUBSCRIBED", "CHILDREN", "SPECIAL-USE", "STATUS"})
MAX_PATTERNS = 32   # far above what a client sends; each costs one match per mailbox
MAX_OPTIONS = 16    # each option at most once is 4 or 5 words; duplicates beyond that are abuse


@dataclass(frozen=True)
class ListRequest:
    reference: str
    patterns: tuple[str, ...]
    select: frozenset[str] = frozenset()
    returns: frozenset[str] = frozenset()
    status_items: tuple[str, ...] = ()

    @property
    def extended(self) -> bool:
        return bool(self.select or self.returns) or len(self.patterns) != 1


def _decoded(token: Token, what: str) -> str:
    if isinstance(token, list):
        raise ParseError(f"{what}: expected a string, got a list")
    text = token.text() if isinstance(token, Literal) else str(token)
    try:
        return decode_mutf7(text)
    except InvalidName as exc:
        raise ParseError(str(exc)) from None


def _options(tokens: list[Token], known: frozenset[str], what: str) -> list[str | list[Token]]:
    if len(tokens) > MAX_OPTIONS * 2:
        raise ParseError(f"too many LIST {what} options")
    names: list[str | list[Token]] = []
    for token in tokens:
        if isinstance(token, list):   # STATUS's item list, checked by the caller
            names.append(token)
            continue
        name = str(token).upper() if isinstance(token, Atom) else ""
        if name not in known:
            raise ParseError(f"unknown LIST {what} option {token!r}")
        names.append(name)
    return names


def parse_list(args: Args) -> ListRequest:
    select: set[str] = set()
    if isinstance(args.peek(), list):
        for name in _options(args.next("selection options"), SELECT_OPTIONS, "selection"):
            if isinstance(name, list):
                raise ParseError("LIST selection options take no list")
            select.add(name)
        if select == {"RECURSIVEMATCH"} or select == {"RECURSIVEMATCH", "REMOTE"}:
            raise ParseError("RECURSIVEMATCH needs another selection option (RFC 5258 3.1)")
    reference = _decoded(args.next("reference"), "reference")
    raw_patterns = args.next("mailbox pattern")
    if isinstance(raw_patterns, list):
        if not raw_patterns or len(raw_patterns) > MAX_PATTERNS:
            raise ParseError(f"LIST takes 1 to {MAX_PATTERNS} patterns")
        patterns = tuple(_decoded(p, "mailbox pattern") for p in raw_patterns)
    else:
        patterns = (_decoded(raw_patterns, "mailbox pattern"),)
    returns: set[str] = set()
    status_items: list[str] = []
    if args.more():
        keyword = args.next("RETURN")
        if not isinstance(keyword, Atom) or keyword.upper() != "RETURN":
            raise ParseError(f"unexpected argument {keyword!r} (RETURN expected)")
        options = _options(args.paren_list("return options"), RETURN_OPTIONS, "return")
        for i, name in enumerate(options):
            if isinstance(name, list):
                if i == 0 or options[i - 1] != "STATUS":
                    raise ParseError("a list in RETURN options must follow STATUS")
                status_items = parse_status_items(name)
                continue
            if name == "STATUS" and (i + 1 >= len(options) or not isinstance(options[i + 1], list)):
                raise ParseError("RETURN STATUS needs a list of status items")
            returns.add(name)
    args.end()
    returns |= select & {"SUBSCRIBED", "SPECIAL-USE"}
    return ListRequest(reference, patterns, frozenset(select), frozenset(returns), tuple(status_items))
