"""Real MIME messages for the fast-view tests: text, HTML, attachments, inline parts, big and bodiless."""

from __future__ import annotations

from email.message import EmailMessage


def _base(n: int, subject: str) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "sender@example.net"
    msg["To"] = "someone@example.com"
    msg["Subject"] = f"{subject} {n}"
    msg["Message-ID"] = f"<fastview-{subject.replace(' ', '-')}-{n}@example.net>"
    return msg


def plain(n: int) -> bytes:
    msg = _base(n, "plain")
    msg.set_content(f"Hello number {n},\n\n  the meeting   moved to Thursday.\nRegards\n")
    return msg.as_bytes()


def html_only(n: int) -> bytes:
    msg = _base(n, "html")
    msg.set_content(f"<html><style>p {{color: red}}</style><body><p>Quarterly <b>report</b> {n}</p>"
                    "<p>&amp; more</p></body></html>", subtype="html")
    return msg.as_bytes()


def with_attachment(n: int) -> bytes:
    msg = _base(n, "attachment")
    msg.set_content(f"Invoice {n} attached.")
    msg.add_attachment(b"%PDF-1.4 fake " * 40, maintype="application", subtype="pdf", filename=f"invoice-{n}.pdf")
    return msg.as_bytes()


def with_inline_image(n: int) -> bytes:
    msg = _base(n, "inline")
    msg.set_content(f"See the picture {n}.")
    msg.add_alternative(f"<p>See the <img src='cid:pic{n}'> picture {n}.</p>", subtype="html")
    msg.get_payload()[1].add_related(b"\x89PNG fake", maintype="image", subtype="png", cid=f"<pic{n}>",
                                     filename=f"pic{n}.png", disposition="inline")
    return msg.as_bytes()


def big(n: int) -> bytes:
    """Over the 1 MiB the preview scans: the attachment after the text is past the prefix."""
    msg = _base(n, "big")
    msg.set_content("Big one. " + "lorem ipsum " * 100_000)
    msg.add_attachment(b"x" * 1000, maintype="application", subtype="octet-stream", filename="tail.bin")
    return msg.as_bytes()


def header_only(n: int) -> bytes:
    return f"From: sender@example.net\r\nSubject: empty {n}\r\n\r\n".encode()


SAMPLES = (plain, html_only, with_attachment, with_inline_image, header_only)


def sample(n: int) -> bytes:
    """The n-th message of a rotating mix of kinds (the big one is added by tests that want it)."""
    return SAMPLES[n % len(SAMPLES)](n)
