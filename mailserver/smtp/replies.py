"""Enhanced status codes (RFC 2034, RFC 3463) on the replies that lack one.

``ENHANCEDSTATUSCODES`` is advertised, so every 2xx, 4xx and 5xx reply must carry a code, except
the greeting and the replies to HELO and EHLO (RFC 2034 section 3). This server's own replies
have theirs; aiosmtpd's built-in replies (``500 Error: command "X" not recognized``, ``501
Syntax: ...``, ``503 Error: need MAIL command``, ``250 OK``, ``221 Bye`` ...) have none, and its
documented way to change what reaches the client is ``SMTP.push``, which the intake overrides
to pass every reply through ``with_status_code``:

* a reply that has a code is left as it is;
* a known aiosmtpd reply gets the RFC 3463 code that says what went wrong (``5.5.1`` a command
  out of sequence or unknown, ``5.5.2`` a syntax error, ``5.5.4`` invalid arguments ...);
* any other 4xx/5xx reply gets ``4.0.0`` / ``5.0.0`` ("other undefined status");
* any other 2xx or 3xx reply is left alone: the greeting, the EHLO keyword lines (a code there
  would corrupt them), HELO's reply, and 3xx replies (354, 334), which need none.

``as_sent`` is what the intake's ``push`` applies: the code above, control characters escaped, and
the 421 instead of aiosmtpd's 502 before it closes a session.
"""

from __future__ import annotations

import re

from mailserver.model.mailbox import printable

# (reply prefix, code) for aiosmtpd 1.4.6's replies without one; the first matching prefix wins.
_AIOSMTPD: tuple[tuple[str, str], ...] = (
    ("250 OK", "2.0.0"),
    ("250 Syntax: ", "2.0.0"),                 # HELP <command>
    ("250 Supported commands: ", "2.0.0"),     # HELP
    ("252 Cannot VRFY user", "2.0.0"),
    ("221 Bye", "2.0.0"),
    ("220 Ready to start TLS", "2.0.0"),
    ("454 TLS not available", "4.7.0"),
    ("500 Command line too long", "5.5.2"),
    ("500 Error: bad syntax", "5.5.2"),
    ("500 Error: strict ASCII mode", "5.5.2"),
    ("500 Error: command ", "5.5.1"),          # "X" not recognized
    ("501 Syntax: ", "5.5.4"),
    ("501 Supported commands: ", "5.5.4"),     # HELP of an unknown command
    ("501 Not enough value", "5.5.4"),
    ("501 Too many values", "5.5.4"),
    ("501 Error: ", "5.5.4"),                  # BODY / SMTPUTF8 parameters
    ("502 Could not VRFY", "5.5.4"),
    ("502 EXPN not implemented", "5.5.1"),
    ("503 ", "5.5.1"),                         # need MAIL / RCPT, send HELO first, nested MAIL, already authenticated
    ("530 Must issue a STARTTLS command first", "5.7.0"),
    ("552 Error: message size exceeds fixed maximum message size", "5.3.4"),
    ("554 Command refused due to lack of security", "5.7.0"),
    ("555 ", "5.5.4"),                         # MAIL/RCPT parameters not recognized
)


_BY_CODE: dict[str, tuple[tuple[str, str], ...]] = {
    reply[:3]: tuple(entry for entry in _AIOSMTPD if entry[0][:3] == reply[:3]) for reply, _ in _AIOSMTPD}
# ``NNN`` and a blank or dash, then ``class.subject.detail`` (RFC 3463); fixed widths, no backtracking
_CODED = re.compile(r"\d{3}[ -][245]\.\d{1,3}\.\d{1,3}(?: |\Z)")


def has_status_code(reply: str) -> bool:
    return _CODED.match(reply) is not None


def with_status_code(reply: str) -> str:
    """``reply`` with its enhanced status code; called for every reply, so the common cases are cheap."""
    if has_status_code(reply):
        return reply
    for prefix, code in _BY_CODE.get(reply[:3], ()):
        if reply.startswith(prefix):
            return f"{reply[:4]}{code} {reply[4:]}"
    if reply[:1] in ("4", "5") and reply[1:3].isdigit() and reply[3:4] in (" ", "-"):
        return f"{reply[:4]}{reply[0]}.0.0 {reply[4:]}"
    return reply


# aiosmtpd's last reply to a session that sent too many unknown commands, before it closes the connection.
_UNRECOGNIZED_LIMIT = "502 5.5.1 Too many unrecognized commands"


def as_sent(reply: str, hostname: str) -> str:
    """``reply`` as the client gets it: with its status code; aiosmtpd's closing 502 made the 421 by which
    RFC 5321 (3.8) tells a client the server closes; control characters escaped (``\\x00``), so a reply
    that echoes the client's octets (a HELO name, an unknown command) cannot end its line early (a bare
    CR) nor carry a terminal's escape sequence."""
    if reply.startswith(_UNRECOGNIZED_LIMIT):
        return f"421 4.7.0 {hostname} Error: too many unrecognized commands"
    return printable(with_status_code(reply))
