"""Hostile messages for the fuzzers: MIME trees of any shape nested past the walkers' limits, with broken
structural headers (no boundary, RFC 2231 pieces, unknown charsets and encodings), garbage in encoded
words, addresses and dates, then cut short, spliced with random octets or with their CRLFs made LFs."""

from __future__ import annotations

from hypothesis import strategies as st

from mailserver.mailbox.content import MAX_DEPTH

LEAF_TYPES = [
    b"text/plain", b"text/plain; charset=utf-8", b"text/plain; charset=x-unknown", b"text/plain; charset=hex",
    b"text/plain; charset*=utf-8''%ff%fe", b"text/html; charset=\"iso-8859-1", b"application/pdf; name=a.pdf",
    b"image/png; name*0*=utf-8''a%ff; name*1=b", b"message/delivery-status", b"text/", b"/", b";;;", b"",
]
MULTIPART_TYPES = [b"mixed", b"alternative", b"digest", b"related", b"report; report-type=delivery-status"]
ENCODINGS = [b"", b"base64", b"quoted-printable", b"8bit", b"x-uuencode", b"bogus"]
DISPOSITIONS = [b"", b"attachment; filename=a.txt", b"inline; filename*=utf-8''%e2%82%ac.pdf",
                b"attachment; filename*0*=x-unknown''%ff; filename*1=b", b"attachment;;", b"inline"]
TOP_HEADERS = [
    b"From: =?utf-8?q?Al=C3=AFce?= <alice@example.com>", b"From: <>, ,,, \"unterminated <a@b",
    b"From: =?x-unknown?b?////?= <@>", b"To: " + b"a@example.com, " * 50, b"To: group: a@b, c@d;, e@f",
    b"Cc: \"\\\" <x@y>", b"Subject: =?utf-8?q?=ZZ?= =?utf-8?b?@@@?=", b"Subject: \xff\xfe 8-bit",
    b"Subject: Re: Fwd: [list] re:  fwd: (fwd)", b"Date: Mon, 99 Foo 99999 99:99:99 +9999", b"Date: ",
    b"Date: Tue, 1 Jan 1970 00:00:00 +0000", b"Message-ID: <" + b"x" * 300 + b">", b"Message-ID:",
    b"X-Folded: a\r\n\tb\r\n c", b"Content-Language: en, fr,, ", b"Content-Location: http://x/\xff",
    b"Content-ID: <\x00>", b"MIME-Version: 1.0", b"Bcc:", b": no name", b"No-Colon-Line",
]


@st.composite
def _leaf(draw: st.DrawFn) -> bytes:
    header = []
    content_type = draw(st.sampled_from(LEAF_TYPES))
    if content_type:
        header.append(b"Content-Type: " + content_type)
    encoding = draw(st.sampled_from(ENCODINGS))
    if encoding:
        header.append(b"Content-Transfer-Encoding: " + encoding)
    disposition = draw(st.sampled_from(DISPOSITIONS))
    if disposition:
        header.append(b"Content-Disposition: " + disposition)
    body = draw(st.one_of(st.binary(max_size=60), st.sampled_from([b"=E9t=C3=A9=\r\n=ZZ", b"QUJD\r\n===", b"<p>x"])))
    return b"".join(h + b"\r\n" for h in header) + b"\r\n" + body


def _render_multipart(subtype: bytes, children: list[bytes], boundary: bytes, closed: bool, attribute: int) -> bytes:
    parameter = [b"; boundary=\"%s\"" % boundary, b"; boundary=%s" % boundary, b"; boundary*0=%s" % boundary,
                 b"", b"; boundary=\"\""][attribute]
    parts = b"".join(b"--" + boundary + b"\r\n" + child + b"\r\n" for child in children)
    return (b"Content-Type: multipart/" + subtype + parameter + b"\r\n\r\npreamble\r\n" + parts
            + (b"--" + boundary + b"--\r\nepilogue\r\n" if closed else b""))


@st.composite
def _container(draw: st.DrawFn, children: st.SearchStrategy[bytes]) -> bytes:
    if draw(st.integers(0, 3)) == 0:
        kind = draw(st.sampled_from([b"message/rfc822", b"message/global", b"message/rfc822; x=y"]))
        return b"Content-Type: " + kind + b"\r\n\r\n" + draw(children)
    boundary = draw(st.sampled_from([b"b", b"=_x", b"a b", b"--", b"b'()+_,-./:=?", b"\xc3\xa9"]))
    return _render_multipart(draw(st.sampled_from(MULTIPART_TYPES)), draw(st.lists(children, max_size=4)),
                             boundary + str(draw(st.integers(0, 3))).encode(), draw(st.booleans()),
                             draw(st.integers(0, 4)))


trees = st.recursive(_leaf(), lambda children: _container(children), max_leaves=10)


def wrapped(tree: bytes, levels: int, attached: list[bool]) -> bytes:
    """``tree`` under ``levels`` more containers (attached message or one-part multipart, as ``attached`` says)."""
    for level in range(levels):
        if attached[level % len(attached)]:
            tree = b"Content-Type: message/rfc822\r\n\r\n" + tree
        else:
            tree = _render_multipart(b"mixed", [tree], b"w%d" % level, True, 0)
    return tree


@st.composite
def messages(draw: st.DrawFn) -> bytes:
    """A message: top header fields, a tree maybe wrapped past the depth limit, then maybe mangled."""
    top = draw(st.lists(st.sampled_from(TOP_HEADERS), max_size=6))
    levels = draw(st.one_of(st.just(0), st.integers(0, 5), st.integers(MAX_DEPTH - 2, MAX_DEPTH + 40)))
    tree = wrapped(draw(trees), levels, draw(st.lists(st.booleans(), min_size=1, max_size=4)))
    raw = b"".join(h + b"\r\n" for h in top) + tree
    mangling = draw(st.sampled_from(["none", "none", "cut", "splice", "lf"]))
    if mangling == "cut":
        raw = raw[:draw(st.integers(0, len(raw)))]
    elif mangling == "splice":
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.binary(min_size=1, max_size=20)) + raw[at:]
    elif mangling == "lf":
        raw = raw.replace(b"\r\n", b"\n")
    return raw


def _nested_multiparts(levels: int) -> bytes:
    head = b"".join(b"Content-Type: multipart/mixed; boundary=n%d\r\n\r\n--n%d\r\n" % (i, i) for i in range(levels))
    tail = b"".join(b"\r\n--n%d--" % i for i in reversed(range(levels)))
    return b"From: deep@example.com\r\nSubject: deep\r\n" + head + b"Content-Type: text/plain\r\n\r\nbottom" + tail


# Messages a fuzzed session finds in its mailbox: what each FETCH and SEARCH runs over.
HOSTILE_MESSAGES: list[bytes] = [
    b"From: a@example.com\r\nTo: b@example.com\r\nSubject: plain\r\nDate: Mon, 23 Nov 2026 10:00:00 +0100\r\n"
    b"\r\nhello\r\n",
    b"From: a@example.com\r\nSubject: multipart\r\nContent-Type: multipart/mixed; boundary=b1\r\n\r\n--b1\r\n"
    b"Content-Type: text/plain; charset=x-unknown\r\n\r\ntext\r\n--b1\r\nContent-Type: message/rfc822\r\n\r\n"
    b"Subject: inner\r\nContent-Type: multipart/alternative; boundary=b2\r\n\r\n--b2\r\n\r\nalt\r\n--b2--\r\n"
    b"--b1--\r\n",
    _nested_multiparts(300),
    b"From: a@example.com\r\nSubject: attached\r\n" + b"Content-Type: message/rfc822\r\n\r\n" * 300 + b"\r\nbottom\r\n",
    b"From: a@example.com\r\nSubject: cut\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: te",
    b"Subject: =?utf-8?b?////?=\r\nFrom: <>,,\r\nDate: 99 Foo\r\nContent-Type: multipart/mixed\r\n\r\nno boundary\r\n",
]
