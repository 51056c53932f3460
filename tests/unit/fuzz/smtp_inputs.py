"""Hostile SMTP dialogues for the fuzzer: command lines of the protocol with arguments off every path of
RFC 5321's grammar (source routes, address literals, parameters, 8-bit, overlong), random octets,
lines past the length limits; after a ``354`` the lines that follow are the message content."""

from __future__ import annotations

from hypothesis import strategies as st

from tests.unit.smtp.smtp_helpers import LOCAL, USER

VERBS = [b"HELO", b"EHLO", b"MAIL FROM:", b"RCPT TO:", b"DATA", b"RSET", b"NOOP", b"QUIT", b"VRFY", b"EXPN", b"HELP",
         b"AUTH PLAIN", b"AUTH LOGIN", b"AUTH CRAM-MD5", b"AUTH", b"STARTTLS", b"BDAT 10", b"XCLIENT", b"mail from:",
         b"ehlo", b"MAIL", b"RCPT", b"MAIL FROM: ", b"RCPT TO: "]
ARGUMENTS = [
    b"", b"client.test", b"[127.0.0.1]", b"[IPv6:::1]", b"\xc3\xa9.test", b"<>", b"<" + USER.encode() + b">",
    b"<nobody@" + LOCAL.encode() + b">", b"<postmaster>", b"<Postmaster>", b"<bob@remote.test>", b"<@a,@b:c@d.test>",
    b"<\"quoted local\"@remote.test>", b"<a@[127.0.0.1]>", b"<a@[IPv6:::1]>", b"<\xc3\xa9@\xc3\xbc.test>", b"<a@b",
    b"a@b>", b"<<a@b>>", b"<a@@b>", b"<.a@b>", b"<a@-b.test>", b"<" + b"a" * 300 + b"@remote.test>",
    b"SIZE=99999999999999999999999", b"SIZE=-1", b"SIZE=", b"BODY=8BITMIME", b"BODY=BINARYMIME", b"BODY=X",
    b"SMTPUTF8", b"AUTH=<>", b"RET=HDRS", b"ENVID=x", b"NOTIFY=NEVER", b"ORCPT=rfc822;a@b", b"=", b"FOO=BAR",
    b"AGFsaWNlAHNlY3JldA==", b"=", b"*", b"!!!", b"\x00", b"\xff\xfe",
]


@st.composite
def _line(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["command", "command", "command", "octets", "long"]))
    if kind == "command":
        words = [draw(st.sampled_from(VERBS)), *draw(st.lists(st.sampled_from(ARGUMENTS), max_size=3))]
        separator = draw(st.sampled_from([b" ", b"", b"  ", b"\t"]))
        return words[0] + separator + b" ".join(words[1:])
    if kind == "octets":
        return draw(st.binary(max_size=200)).replace(b"\n", b"")
    return draw(st.sampled_from([b"NOOP ", b"MAIL FROM:<", b"RCPT TO:<", b"EHLO ", b""])) + b"x" * draw(
        st.sampled_from([500, 997, 998, 1000, 2048, 8192, 8193, 20000]))


ADDRESSES = [a for a in ARGUMENTS if a.startswith(b"<") or a.endswith(b">")] + [b""]
PARAMETERS = [a for a in ARGUMENTS if b"=" in a or a == b"SMTPUTF8"]
CREDENTIALS = [b"AGFsaWNlQGxvY2FsLnRlc3QAczNjcmV0LVBhc3N3MHJk", b"AGFsaWNlQGxvY2FsLnRlc3QAd3Jvbmc=", b"=", b"*",
               b"!!notbase64", b"AAAA", b"YWxpY2U=", b"", b"A" * 2000]


@st.composite
def _transaction(draw: st.DrawFn) -> list[bytes]:
    """MAIL, RCPTs and maybe DATA, with hostile paths and parameters."""
    def path(verb: bytes, usual: bytes) -> bytes:   # half the time what a client sends, so the dialogue goes on
        params = draw(st.one_of(st.just([]), st.just([]), st.lists(st.sampled_from(PARAMETERS), max_size=2)))
        return b" ".join([verb + draw(st.one_of(st.just(usual), st.just(usual), st.sampled_from(ADDRESSES))), *params])
    lines = [path(b"MAIL FROM:", b"<bob@remote.test>")]
    lines += [path(b"RCPT TO:", b"<" + USER.encode() + b">") for _ in range(draw(st.integers(0, 4)))]
    return lines + ([b"DATA"] if draw(st.integers(0, 3)) else [])


@st.composite
def _authentication(draw: st.DrawFn) -> list[bytes]:
    mechanism = draw(st.sampled_from([b"PLAIN", b"LOGIN", b"CRAM-MD5", b"XOAUTH2", b"plain"]))
    initial = draw(st.sampled_from([*CREDENTIALS, None]))
    responses = draw(st.lists(st.sampled_from(CREDENTIALS), min_size=2, max_size=2))
    return [b"AUTH " + mechanism + (b" " + initial if initial is not None else b""), *responses]


@st.composite
def _dialogue(draw: st.DrawFn) -> list[bytes]:
    """Mostly the protocol's order (a greeting, transactions, AUTH, QUIT) with random lines put anywhere."""
    lines: list[bytes] = []
    if draw(st.integers(0, 4)):
        name = draw(st.one_of(st.just(b"client.test"), st.sampled_from(ARGUMENTS)))
        lines.append(draw(st.sampled_from([b"EHLO ", b"EHLO ", b"HELO ", b"ehlo "])) + name)
    for _ in range(draw(st.integers(0, 3))):
        lines += draw(st.one_of(_transaction(), _transaction(), _authentication()))
    for _ in range(draw(st.integers(0, 4))):
        lines.insert(draw(st.integers(0, len(lines))), draw(_line()))
    if draw(st.booleans()):
        lines.append(b"QUIT")
    return lines or [b"NOOP"]


dialogues = st.one_of(_dialogue(), _dialogue(), st.lists(_line(), min_size=1, max_size=24))
# A lone "." would end the content early and the rest would arrive as commands unasked (pipelining).
contents = st.lists(st.one_of(st.binary(max_size=100).map(lambda b: b.replace(b"\n", b"")).filter(lambda b: b != b"."),
                              st.sampled_from([b"..", b".x", b"x" * 8192, b"x" * 9000, b"Subject: x", b""])),
                    max_size=8)
