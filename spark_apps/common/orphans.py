"""Content blobs nothing references, and which of them are whole mails that can be enqueued again.

The mail queue stores a mail as two blobs first (header, body), then writes its view row and
publishes it: a crash in between leaves two blobs no table references (the seed's orphaned queue
items). Nothing links the two blobs of one mail, and with deduplication a blob may be shared, so
recovery is deliberately conservative. Everything here is pure (unit-tested); the recovery job
feeds it the unreferenced blobs of its time window and what their first bytes say.

* **Header blobs** end with the empty line and hold only header fields; everything else is a body.
* **Whole mail**: a header blob and a body blob paired *unambiguously*, either by MIME structure (the
  header's multipart boundary appears in exactly one orphan body, and that body in no other
  header's) or by time (the only header and the only body written within ``window_ms`` of each
  other, the header first: enqueue writes them back to back);
* **received by this server**: its topmost ``Received`` field is the SMTP intake's (``by <host>
  (<software name>)``) and dated inside the window, so a message that only passed through a mailbox
  (an IMAP APPEND later expunged, an old message re-imported) is never sent out again;
* **envelope**: the recipient of the intake's ``for <...>`` clause (single-recipient transactions),
  else every address of To, Cc and Bcc; the sender is Return-Path, else the first From address.

Every other orphan is *ambiguous* and only reported (with its id and the reason): nothing is
deleted, an operator can look at it.
"""

from __future__ import annotations

import email.utils
import hashlib
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from email.parser import BytesHeaderParser
from email.policy import compat32
from typing import Any

BLOB_ID_ALPHABET = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
HEADER_SCAN_LIMIT = 1024 * 1024     # the server's MAX_HEADER_BYTES: a longer "header" is not one
BODY_SCAN_BYTES = 64 * 1024          # where body delimiters are looked for
RECOVERY_NAMESPACE = uuid.UUID("0f6f1b52-77a4-4d0b-8d1c-5a4f6f0f2a10")
_FIELD = re.compile(rb"^[!-9;-~]+:")
_DELIMITER = re.compile(rb"^--([ -~]{1,70}?)(--)?[ \t]*\r?$")
_BY = re.compile(r"\bby\s+(\S+)\s+\(([^)]*)\)", re.IGNORECASE)
_FOR = re.compile(r"\bfor\s+<([^>]+)>", re.IGNORECASE)


@dataclass(frozen=True)
class BlobFeatures:
    blob_id: str
    size: int
    modified_ms: int
    kind: str                                   # "header" or "body"
    boundary: str | None = None                 # header: multipart boundary
    delimiters: tuple[str, ...] = ()            # body: "--X" lines seen (X)
    received_by: str | None = None              # header: "<host> (<software>)" of the topmost Received
    received_ms: int | None = None              # header: its date
    received_for: str | None = None             # header: its "for <...>"
    sender: str | None = None                   # header: Return-Path, else the first From address
    recipients: tuple[str, ...] = ()            # header: To, Cc, Bcc
    message_id: str | None = None

    def as_row(self) -> dict[str, Any]:
        return {"blob_id": self.blob_id, "size": self.size, "modified_ms": self.modified_ms, "kind": self.kind,
                "boundary": self.boundary, "delimiters": list(self.delimiters), "received_by": self.received_by,
                "received_ms": self.received_ms, "received_for": self.received_for, "sender": self.sender,
                "recipients": list(self.recipients), "message_id": self.message_id}

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> BlobFeatures:
        return cls(row["blob_id"], int(row["size"]), int(row["modified_ms"]), row["kind"], row.get("boundary"),
                   tuple(row.get("delimiters") or ()), row.get("received_by"), row.get("received_ms"),
                   row.get("received_for"), row.get("sender"), tuple(row.get("recipients") or ()),
                   row.get("message_id"))


@dataclass(frozen=True)
class RecoveredMail:
    header: BlobFeatures
    body: BlobFeatures
    evidence: str                               # "boundary" or "time"
    sender: str | None
    recipients: tuple[str, ...]

    @property
    def name(self) -> str:
        digest = hashlib.sha256(f"{self.header.blob_id}|{self.body.blob_id}".encode()).hexdigest()
        return f"recovered-{digest[:24]}"

    @property
    def enqueue_id(self) -> uuid.UUID:
        return uuid.uuid5(RECOVERY_NAMESPACE, f"{self.header.blob_id}|{self.body.blob_id}")


@dataclass
class Pairing:
    recovered: list[RecoveredMail] = field(default_factory=list)
    ambiguous: list[dict[str, Any]] = field(default_factory=list)   # {"blobId", "kind", "reason"}


def is_header_block(data: bytes) -> bool:
    """Whether a whole blob is a header block as the queue's split writes it: fields up to the empty line."""
    if not data or len(data) > HEADER_SCAN_LIMIT or b"\x00" in data:
        return False
    if not (data.endswith(b"\r\n\r\n") or data.endswith(b"\n\n")):
        return False
    lines = data.split(b"\n")
    if not _FIELD.match(lines[0]):
        return False
    for line in lines[1:-2]:
        text = line.rstrip(b"\r")
        if not text:
            return False   # an empty line before the end: this is a message, not a header block
        if not (text[:1] in (b" ", b"\t") or _FIELD.match(text)):
            return False
    return True


def _addresses(values: Sequence[str]) -> list[str]:
    found = []
    for _name, address in email.utils.getaddresses([str(v) for v in values if v]):
        address = address.strip()
        if "@" in address and address not in found:
            found.append(address)
    return found


def header_features(blob_id: str, data: bytes, size: int, modified_ms: int) -> BlobFeatures:
    message = BytesHeaderParser(policy=compat32).parsebytes(data)
    boundary = message.get_param("boundary") if message.get_content_maintype() == "multipart" else None
    received = message.get_all("Received") or []
    by = received_ms = received_for = None
    if received:
        top = " ".join(str(received[0]).split())
        match = _BY.search(top)
        if match:
            by = f"{match.group(1)} ({match.group(2)})"
        found = _FOR.search(top)
        received_for = found.group(1).strip() if found else None
        if ";" in top:
            try:
                parsed = email.utils.parsedate_to_datetime(top.rsplit(";", 1)[1].strip())
            except (TypeError, ValueError, IndexError):
                parsed = None
            received_ms = int(parsed.timestamp() * 1000) if parsed is not None and parsed.tzinfo else None
    return_path = _addresses(message.get_all("Return-Path") or [])
    from_ = _addresses(message.get_all("From") or [])
    recipients = _addresses([*(message.get_all("To") or []), *(message.get_all("Cc") or []),
                             *(message.get_all("Bcc") or [])])
    return BlobFeatures(blob_id, size, modified_ms, "header", str(boundary) if boundary else None, (),
                        by, received_ms, received_for, next(iter(return_path or from_), None), tuple(recipients),
                        str(message.get("Message-ID")).strip() if message.get("Message-ID") else None)


def body_features(blob_id: str, prefix: bytes, size: int, modified_ms: int) -> BlobFeatures:
    delimiters = []
    for line in prefix[:BODY_SCAN_BYTES].split(b"\n"):
        match = _DELIMITER.match(line)
        if match:
            value = match.group(1).decode("ascii", "replace").rstrip()
            if value and value not in delimiters:
                delimiters.append(value)
    return BlobFeatures(blob_id, size, modified_ms, "body", delimiters=tuple(delimiters))


def features_of(blob_id: str, data: bytes, size: int, modified_ms: int) -> BlobFeatures:
    """``data``: the whole blob when it may be a header block (``size <= HEADER_SCAN_LIMIT``), else its start."""
    if len(data) == size and is_header_block(data):
        try:
            return header_features(blob_id, data, size, modified_ms)
        except Exception:   # an unparsable header block is no mail we can send again
            return BlobFeatures(blob_id, size, modified_ms, "body")
    return body_features(blob_id, data, size, modified_ms)


def intake_signature_matches(features: BlobFeatures, signature: str) -> bool:
    return bool(features.received_by) and signature.lower() in (features.received_by or "").lower()


def pair(blobs: Sequence[BlobFeatures], *, window_ms: int, signature: str, since_ms: int,
         until_ms: int) -> Pairing:
    """Pure: the whole mails among orphan blobs, and why each other one is left alone."""
    result = Pairing()
    headers = {b.blob_id: b for b in blobs if b.kind == "header"}
    bodies = {b.blob_id: b for b in blobs if b.kind == "body"}
    pairs: dict[str, tuple[str, str]] = {}   # header id -> (body id, evidence)

    claims: dict[str, list[str]] = {}
    for h in headers.values():
        if h.boundary:
            for b in bodies.values():
                if h.boundary in b.delimiters:
                    claims.setdefault(h.blob_id, []).append(b.blob_id)
    claimed_by: dict[str, list[str]] = {}
    for h_id, b_ids in claims.items():
        for b_id in b_ids:
            claimed_by.setdefault(b_id, []).append(h_id)
    for h_id, b_ids in claims.items():
        if len(b_ids) == 1 and len(claimed_by[b_ids[0]]) == 1:
            pairs[h_id] = (b_ids[0], "boundary")

    used_bodies = {b for b, _ in pairs.values()}
    rest = sorted([b for b in blobs if (b.kind == "header" and b.blob_id not in pairs and not b.boundary)
                   or (b.kind == "body" and b.blob_id not in used_bodies and b.blob_id not in claimed_by)],
                  key=lambda b: (b.modified_ms, b.kind != "header"))
    clusters: list[list[BlobFeatures]] = []
    for b in rest:
        if clusters and b.modified_ms - clusters[-1][-1].modified_ms <= window_ms:
            clusters[-1].append(b)
        else:
            clusters.append([b])
    for cluster in clusters:
        hs = [b for b in cluster if b.kind == "header"]
        bs = [b for b in cluster if b.kind == "body"]
        if len(hs) == 1 and len(bs) == 1 and hs[0].modified_ms <= bs[0].modified_ms:
            pairs[hs[0].blob_id] = (bs[0].blob_id, "time")

    paired_bodies = {b for b, _ in pairs.values()}
    for h in headers.values():
        if h.blob_id not in pairs:
            reason = ("multipart header whose boundary is in no single orphan body" if h.boundary
                      else "no single body written with it")
            result.ambiguous.append({"blobId": h.blob_id, "kind": "header", "reason": reason})
            continue
        body_id, evidence = pairs[h.blob_id]
        problem = _not_received_here(h, signature, since_ms, until_ms)
        recipients = (h.received_for,) if h.received_for else h.recipients
        recipients = tuple(r for r in recipients if _valid(r))
        if problem is None and not recipients:
            problem = "no recipient in the header"
        if problem is not None:
            for blob_id, kind in ((h.blob_id, "header"), (body_id, "body")):
                result.ambiguous.append({"blobId": blob_id, "kind": kind, "reason": problem})
            continue
        sender = h.sender if h.sender and _valid(h.sender) else None
        result.recovered.append(RecoveredMail(h, bodies[body_id], evidence, sender, recipients))
    for b in bodies.values():
        if b.blob_id not in paired_bodies:
            reason = ("claimed by several multipart headers" if len(claimed_by.get(b.blob_id, [])) > 1
                      else "no single header written with it")
            result.ambiguous.append({"blobId": b.blob_id, "kind": "body", "reason": reason})
    return result


def _not_received_here(h: BlobFeatures, signature: str, since_ms: int, until_ms: int) -> str | None:
    if not intake_signature_matches(h, signature):
        return f"its topmost Received field is not this server's SMTP intake ({signature})"
    if h.received_ms is None or not since_ms <= h.received_ms <= until_ms:
        return "received outside the recovery window (an older message stored again?)"
    return None


def _valid(address: str) -> bool:
    from mailserver.model.address import InvalidAddress, MailAddress

    try:
        MailAddress.of(address)
        return True
    except InvalidAddress:
        return False
