"""The Mail flowing through the spool (James's ``Mail``): envelope, state, attributes, content.

The message content is referenced, not held: ``MailContent`` is either small bytes (built in
tests and by mailets that rewrite headers) or a pair of blob ids in the blob store (what the
queue and the repositories carry), opened as a stream when a mailet needs the bytes.
"""

from __future__ import annotations

import hashlib
import json
import string
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from mailserver import randomness
from mailserver.model.address import MailAddress

ROOT, TRANSPORT, LOCAL_DELIVERY, ERROR, GHOST = "root", "transport", "local-delivery", "error", "ghost"

# Attribute names James sets (wire-visible: they travel in queues and repositories).
SMTP_AUTH_USER = "org.apache.james.SMTPAuthUser"
SMTP_IS_AUTH_NETWORK = "org.apache.james.SMTPIsAuthNetwork"
HELO = "org.apache.james.HELO"
SMTP_SESSION_ID = "org.apache.james.SMTPSessionID"
SENT_BY_MAILET = "org.apache.james.SentByMailet"
# JMAP submission marks its mails with the authenticated user (James's SentByJmap checks it).
JMAP_AUTH_USER = "org.apache.james.jmap.send.MailMetaData.username"
MAILET_ERROR = "org.apache.james.MailetError"
FORWARDED = "org.apache.james.forwarded"
PROCESSING_ERROR_COUNT = "mail-processing-error-count"
DELIVERY_RETRY_COUNT = "delivery_retry_count"
DELIVERY_ERROR = "delivery-error"
DELIVERY_ERROR_CODE = "delivery-error-code"
IS_DELIVERY_PERMANENT_ERROR = "is-delivery-permanent-error"
REPROCESSING = "mailRepository-reprocessing"

_ALNUM = string.ascii_letters + string.digits


def new_mail_name() -> str:
    """``Mail<epochMillis>-<20 random alphanumerics>``, James's format.

    The 20 characters are the base-62 digits of one 128-bit random number (``mailserver.randomness``:
    ``secrets.choice`` made twenty system calls; three names a mail, one per SMTP envelope). 62**20
    is 0.2 % of 2**128, so no digit value is measurably more likely than another."""
    number = randomness.randbits(128)
    digits = []
    for _ in range(20):
        number, digit = divmod(number, 62)
        digits.append(_ALNUM[digit])
    return f"Mail{int(time.time() * 1000)}-" + "".join(digits)


def split_name(name: str, recipients: Iterable[MailAddress]) -> str:
    """Name of a copy made by a matcher split: ``<name>!<4 alphanumerics>`` (James: random ones).

    Here they come from the name and the copy's recipients, so the same split made again (the
    spool item delivered again after a crash) names its copy the same, and local delivery, whose
    message ids derive from the name, stores it once.
    """
    digest = int.from_bytes(hashlib.sha256("\0".join([name, *sorted(str(r).lower() for r in recipients)])
                                          .encode()).digest()[:8], "big")
    return name + "!" + "".join(_ALNUM[(digest >> (6 * i)) % len(_ALNUM)] for i in range(4))


@dataclass(frozen=True)
class MailContent:
    """Either inline ``data`` or (``header_blob_id``, ``body_blob_id``) in the default bucket."""

    size: int
    data: bytes | None = None
    header_blob_id: str | None = None
    body_blob_id: str | None = None

    @classmethod
    def of_bytes(cls, data: bytes) -> MailContent:
        return cls(size=len(data), data=data)

    @classmethod
    def of_blobs(cls, header_blob_id: str, body_blob_id: str, size: int) -> MailContent:
        return cls(size=size, header_blob_id=header_blob_id, body_blob_id=body_blob_id)

    @property
    def stored(self) -> bool:
        return self.header_blob_id is not None

    def blob_ids(self) -> tuple[str, str]:
        """(header, body) blob ids of stored content; ValueError for inline content."""
        if self.header_blob_id is None or self.body_blob_id is None:
            raise ValueError("the mail content is inline, it has no blobs")
        return self.header_blob_id, self.body_blob_id


@dataclass(frozen=True)
class PerRecipientHeader:
    recipient: str
    name: str
    value: str


def _json_value(value: Any) -> Any:
    """Attributes must survive a queue or a repository: JSON values only (James drops the rest)."""
    json.dumps(value)
    return value


@dataclass
class Mail:
    name: str
    sender: MailAddress | None          # None = the null reverse-path <>
    recipients: list[MailAddress]
    content: MailContent
    state: str = ROOT
    error_message: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    remote_host: str = "localhost"
    remote_addr: str = "127.0.0.1"
    last_updated: datetime = field(default_factory=lambda: datetime.now(UTC))
    per_recipient_headers: list[PerRecipientHeader] = field(default_factory=list)

    def set_attribute(self, name: str, value: Any) -> None:
        self.attributes[name] = _json_value(value)

    def copy_for(self, recipients: list[MailAddress], *, name: str | None = None) -> Mail:
        """A copy with another recipient list (matcher split); content is shared, not copied."""
        return replace(self, name=name or split_name(self.name, recipients), recipients=list(recipients),
                       attributes=dict(self.attributes), per_recipient_headers=list(self.per_recipient_headers))

    def serializable_attributes(self) -> dict[str, Any]:
        out = {}
        for key, value in self.attributes.items():
            try:
                out[key] = _json_value(value)
            except (TypeError, ValueError):
                continue  # James's NoSerializer values are dropped when the mail is stored
        return out
