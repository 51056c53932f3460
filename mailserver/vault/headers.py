"""Sender, recipients and subject of a deleted message, from its header only, never an error.

James parses the header permissively (mime4j): an address it cannot read is dropped. The
sender is the ``Sender`` field, else the first ``From`` address (RFC 5322 3.6.2: the author is the
sender when there is one); James takes ``Sender`` only (docs/compatibility.md). Recipients are
the ``To``, ``Cc`` and ``Bcc`` addresses, as James's ``Envelope.fromMime4JMessage``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from email.header import decode_header, make_header
from email.parser import BytesHeaderParser
from email.policy import compat32
from email.utils import getaddresses

from mailserver.model.address import InvalidAddress, MailAddress

log = logging.getLogger(__name__)
_PARSER = BytesHeaderParser(policy=compat32)
_FOLD = re.compile(r"\r?\n(?=[ \t])")


@dataclass(frozen=True)
class HeaderFacts:
    sender: MailAddress | None
    recipients: tuple[MailAddress, ...]
    subject: str | None


def _addresses(values: list[str]) -> list[MailAddress]:
    found = []
    for _, raw in getaddresses([str(v) for v in values]):
        try:
            found.append(MailAddress.of(raw))
        except InvalidAddress:
            continue
    return found


def _subject(raw: object) -> str | None:
    if raw is None:
        return None
    text = _FOLD.sub("", str(raw))
    try:
        return str(make_header(decode_header(text)))
    except Exception:  # an undecodable encoded word: the raw text, as a permissive parser keeps it
        return text


def header_facts(header: bytes) -> HeaderFacts:
    try:
        message = _PARSER.parsebytes(header)
        sender = _addresses(message.get_all("Sender") or []) or _addresses(message.get_all("From") or [])
        recipients = _addresses([*(message.get_all("To") or []), *(message.get_all("Cc") or []),
                                 *(message.get_all("Bcc") or [])])
        return HeaderFacts(sender[0] if sender else None, tuple(dict.fromkeys(recipients)),
                           _subject(message.get("Subject")))
    except Exception as exc:  # the vault keeps a message whatever its header looks like
        log.warning("unparseable header of a deleted message (%s: %s)", type(exc).__name__, exc)
        return HeaderFacts(None, (), None)
