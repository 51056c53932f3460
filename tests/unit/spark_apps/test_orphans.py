"""Which unreferenced blobs are whole mails (``spark_apps.common.orphans``): header blocks, pairing by MIME
boundary or by time, the intake's Received field, the envelope, and everything left alone with its reason."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

from mailserver.mailbox.content import split
from spark_apps.common.orphans import features_of, is_header_block, pair

T0 = datetime(2026, 5, 2, 10, 0, tzinfo=UTC)
MS = int(T0.timestamp() * 1000)
SIGNATURE = "JAMES SMTP Server"


def message(rcpt: str | None = "alice@local.test", *, to: str = "alice@local.test, bob@local.test",
            boundary: str | None = None, received: bool = True, at: datetime = T0, body: str = "hello\r\n") -> bytes:
    lines = []
    if received:
        lines += ["Received: from client.example (EHLO client.example) ([192.0.2.1])",
                  f"          by mx.local.test ({SIGNATURE}) with ESMTP ID 4f2a"]
        lines += [f"          for <{rcpt}>;"] if rcpt else [lines.pop() + ";"]
        lines += ["          " + format_datetime(at)]
    lines += ["From: Sender <sender@remote.example>", f"To: {to}", "Subject: hi", "Message-ID: <m1@remote.example>"]
    if boundary:
        lines += ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{boundary}"']
        body = f"--{boundary}\r\nContent-Type: text/plain\r\n\r\n{body}--{boundary}--\r\n"
    return ("\r\n".join(lines) + "\r\n\r\n" + body).encode()


def blobs(raw: bytes, prefix: str, modified_ms: int) -> tuple:
    parts = split(raw)
    body = parts.body.read()
    parts.close()
    return (features_of(f"{prefix}-h", parts.header, len(parts.header), modified_ms),
            features_of(f"{prefix}-b", body, len(body), modified_ms))


def run(features, window_ms=2000):
    return pair(features, window_ms=window_ms, signature=SIGNATURE, since_ms=MS - 60_000, until_ms=MS + 3_600_000)


def test_header_blocks_are_recognised():
    parts = split(message())
    assert is_header_block(parts.header)
    assert not is_header_block(b"hello\r\n\r\n")
    assert not is_header_block(b"Subject: x\r\n\r\nbody\r\n\r\n")   # a whole message is not a header block
    assert not is_header_block(b"Subject: x\r\n")                    # no end of header
    header = features_of("h", parts.header, len(parts.header), MS)
    assert header.kind == "header" and header.received_for == "alice@local.test"
    assert header.received_by == f"mx.local.test ({SIGNATURE})" and header.received_ms == MS
    assert header.sender == "sender@remote.example" and header.recipients == ("alice@local.test", "bob@local.test")
    parts.close()


def test_a_lone_pair_written_together_is_a_whole_mail_for_the_intake_recipient():
    header, body = blobs(message(), "m1", MS)
    result = run([header, body])
    [mail] = result.recovered
    assert (mail.header.blob_id, mail.body.blob_id, mail.evidence) == ("m1-h", "m1-b", "time")
    assert mail.recipients == ("alice@local.test",) and mail.sender == "sender@remote.example"
    assert mail.name.startswith("recovered-") and mail.enqueue_id == run([header, body]).recovered[0].enqueue_id
    assert result.ambiguous == []


def test_without_a_for_clause_the_recipients_are_the_header_addresses():
    header, body = blobs(message(rcpt=None), "m1", MS)
    [mail] = run([header, body]).recovered
    assert mail.recipients == ("alice@local.test", "bob@local.test")


def test_multipart_mails_pair_by_boundary_even_when_written_in_the_same_second():
    features = [*blobs(message(boundary="b-one", body="one\r\n"), "m1", MS),
                *blobs(message(boundary="b-two", body="two\r\n"), "m2", MS),
                *blobs(message(boundary="b-three", body="three\r\n"), "m3", MS)]
    result = run(features)
    assert sorted((m.header.blob_id, m.body.blob_id, m.evidence) for m in result.recovered) == [
        ("m1-h", "m1-b", "boundary"), ("m2-h", "m2-b", "boundary"), ("m3-h", "m3-b", "boundary")]


def test_single_part_mails_written_together_are_ambiguous_and_left_alone():
    features = [*blobs(message(body="one\r\n"), "m1", MS), *blobs(message(body="two\r\n"), "m2", MS + 500)]
    result = run(features)
    assert result.recovered == []
    assert sorted(a["blobId"] for a in result.ambiguous) == ["m1-b", "m1-h", "m2-b", "m2-h"]


def test_single_part_mails_written_apart_pair_by_time():
    features = [*blobs(message(body="one\r\n"), "m1", MS), *blobs(message(body="two\r\n"), "m2", MS + 10_000)]
    assert sorted(m.header.blob_id + "+" + m.body.blob_id for m in run(features).recovered) == ["m1-h+m1-b",
                                                                                                 "m2-h+m2-b"]


def test_what_did_not_come_through_the_intake_is_never_sent_again():
    old = datetime(2025, 1, 1, tzinfo=UTC)
    for raw, reason in [(message(received=False), "not this server's SMTP intake"),
                        (message(at=old), "outside the recovery window")]:
        result = run(list(blobs(raw, "m", MS)))
        assert result.recovered == []
        assert {a["blobId"] for a in result.ambiguous} == {"m-h", "m-b"}
        assert all(reason in a["reason"] for a in result.ambiguous)


def test_a_header_without_recipient_is_left_alone():
    result = run(list(blobs(message(rcpt=None, to="undisclosed-recipients:;"), "m", MS)))
    assert result.recovered == [] and result.ambiguous[0]["reason"] == "no recipient in the header"


def test_lone_halves_are_reported():
    header, _body = blobs(message(), "m", MS)
    result = run([header, blobs(message(), "late", MS + 60_000)[1]])
    assert result.recovered == []
    assert sorted((a["blobId"], a["kind"]) for a in result.ambiguous) == [("late-b", "body"), ("m-h", "header")]
