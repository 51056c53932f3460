"""LocalDelivery: store a mail into each local recipient's INBOX (James's LocalDelivery + MailDispatcher).

Per recipient, the stored copy gets ``Return-Path: <sender>`` (replacing any) at the top and
the mail's per-recipient headers for that recipient (``Delivered-To`` ...) at the end of the
header, as James's MailDispatcher does. The INBOX is created on first delivery.

A recipient whose storage fails (over quota, no such account, storage error after
``retries`` attempts) does not stop the others: the failed recipients are sent through the
spool as a new mail ``error-<name>`` to the ``onMailetException`` processor (default
``error``, whose chain bounces it and keeps it in ``var/mail/error``). The mail is then
consumed (ghosted) unless ``consume`` is false.

The body written at intake becomes the first local recipient's stored body when the mail comes
from the spool (``blob_handover``): one S3 PUT and one DELETE less per mail; the other
recipients get copies of their own, as before.

Delivery has an exactly-once effect per mail and recipient: the stored copy's message id is
derived from the mail's name and the recipient (``delivery_id``), and a copy already stored under
it (the spool item came again after a crash) is not stored twice; such skips are counted
(``localDeliveryDuplicates``). A copy the crash left half written is finished instead
(``MailboxManager.append_once``; counted as ``localDeliveryHalfWrittenFinished`` too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tenacity import retry, retry_if_not_exception_type, stop_after_attempt, wait_exponential, wait_random_exponential

from mailserver.mailbox.content import MalformedMessage
from mailserver.mailbox.errors import MailboxExists, MailboxNotFound, OverQuota
from mailserver.mailbox.manager import AppendOnce, StoredBody
from mailserver.mailets import blob_handover
from mailserver.mailets.api import Mailet, Params
from mailserver.mailets.delivery_id import delivery_message_id
from mailserver.mailets.mime import edit_header, separated
from mailserver.mailets.rewrite import RRT_ERROR, rewrite_recipients
from mailserver.model.address import MailAddress
from mailserver.model.ids import MessageId
from mailserver.model.mail import ERROR, GHOST, Mail
from mailserver.model.mailbox import MailboxPath

if TYPE_CHECKING:
    from mailserver.mailets.context import MailetContext

RETURN_PATH = "Return-Path"


class NotALocalUser(Exception):
    def __init__(self, recipient: MailAddress) -> None:
        super().__init__(f"550 5.1.1 {recipient}: no such local user")


# Not retried: trying again cannot help.
_PERMANENT = (OverQuota, MalformedMessage, NotALocalUser)


class LocalDelivery(Mailet):
    name = "LocalDelivery"
    PARAMS = frozenset({"consume", "retries", "onMailetException", "resolveRecipients", "errorProcessor"})

    def __init__(self, params: Params, context: MailetContext) -> None:
        super().__init__(params, context)
        self.consume = params.boolean("consume", True)
        self.retries = params.integer("retries", 3, minimum=0)
        self.on_failure = params.get("onMailetException", ERROR) or ERROR
        # James resolves aliases in the transport processor (RecipientRewriteTable mailet); a
        # chain without that step can let LocalDelivery do it.
        self.resolve = params.boolean("resolveRecipients", False)
        self.rrt_error = params.get("errorProcessor", RRT_ERROR) or RRT_ERROR
        # A storage failure is tried again after 0.1-0.2 s, doubling up to 0.5-1 s: half fixed, half
        # random, so the deliveries that failed together do not come back together.
        self._deliver_with_retries = retry(
            retry=retry_if_not_exception_type(_PERMANENT), stop=stop_after_attempt(self.retries + 1),
            wait=wait_exponential(multiplier=0.1, max=0.5) + wait_random_exponential(multiplier=0.1, max=0.5),
            reraise=True)(self._deliver)

    def referenced_processors(self) -> list[str]:
        names = [] if self.on_failure.lower() in ("ignore", "propagate") else [self.on_failure]
        return names + ([self.rrt_error] if self.resolve else [])

    def service(self, mail: Mail) -> None:
        if self.resolve:
            rewrite_recipients(self.context, mail, self.rrt_error)
            if mail.state == GHOST:
                return
        log = self.context.mail_logger(mail)
        header = self.context.contents.read_header(mail.content)
        body = self.context.contents.read_body(mail.content)
        failed: list[tuple[MailAddress, Exception]] = []
        for recipient in mail.recipients:
            try:
                self._deliver_with_retries(mail, recipient, header, body)
                self.context.count("localDeliveredMails")
                log.info("delivered to %s", recipient)
            except Exception as exc:  # one recipient's failure must not lose the others
                log.warning("delivery to %s failed: %s", recipient, exc)
                failed.append((recipient, exc))
        if failed:
            self._handle_failures(mail, failed)
        if self.consume:
            mail.state = GHOST

    def _deliver(self, mail: Mail, recipient: MailAddress, header: bytes, body: bytes) -> None:
        if not self.context.is_local_user(recipient):
            raise NotALocalUser(recipient)
        own = tuple((h.name, h.value) for h in mail.per_recipient_headers
                    if h.recipient.lower() == str(recipient).lower())
        return_path = f"<{mail.sender}>" if mail.sender else "<>"
        edited = separated(edit_header(header, remove=(RETURN_PATH,), prepend=((RETURN_PATH, return_path),),
                                       add=own), body_follows=bool(body))
        inbox = MailboxPath.inbox(self.context.username_of(recipient))
        manager = self.context.mailboxes
        message_id = delivery_message_id(mail.name, recipient)
        reused = self._claim_body(mail, body, message_id)
        raw = edited if reused is not None else edited + body
        try:
            try:
                stored = self._append(inbox, raw, message_id, reused)
            except MailboxNotFound:
                try:
                    manager.create_mailbox(inbox)
                except MailboxExists:
                    pass  # created by a concurrent delivery
                stored = self._append(inbox, raw, message_id, reused)
        except Exception:
            if reused is not None:
                self._settle_claim(reused, message_id)
            raise
        if stored is not None and stored.appended is None:
            if reused is not None:   # stored before: its body may or may not be this blob
                self._settle_claim(reused, message_id)
            # Delivered before a crash kept the spool item from being acknowledged: not twice.
            self.context.count("localDeliveryDuplicates")
            if stored.finished:
                self.context.count("localDeliveryHalfWrittenFinished")
            self.context.mail_logger(mail).info(
                "already delivered to %s (message %s): skipped%s", recipient, message_id,
                f", finished the copy the crash left half written in {len(stored.finished)} mailbox(es)"
                if stored.finished else "")

    def _append(self, inbox: MailboxPath, data: bytes, message_id: MessageId | None,
                body: StoredBody | None) -> AppendOnce | None:
        manager = self.context.mailboxes
        if message_id is None:   # a name without creation time: no de-duplication (nor a claimed body)
            manager.append(inbox, data, is_delivery=True)
            return None
        return manager.append_once(inbox, data, message_id, is_delivery=True, body=body)

    def _claim_body(self, mail: Mail, body: bytes, message_id: MessageId | None) -> StoredBody | None:
        """The mail's stored body for this recipient's message, when the spool entry can hand it over.

        Only with a message id (a redelivery must be able to find which blob its earlier copy took)
        and a body in the mailbox's own bucket.
        """
        content = mail.content
        if (message_id is None or not body or not content.stored or content.body_blob_id is None
                or self.context.contents.blobs.default_bucket != self.context.mailboxes.blobs.default_bucket):
            return None
        if not blob_handover.claim(content.body_blob_id):
            return None
        return StoredBody(content.body_blob_id, len(body))

    def _settle_claim(self, reused: StoredBody, message_id: MessageId | None) -> None:
        """Keep the claim when the copy stored under ``message_id`` uses the blob (or when that cannot
        be read: a blob left behind is better than a stored message without its body)."""
        try:
            taken = message_id is not None and self.context.mailboxes.body_blob_id(message_id) == reused.blob_id
        except Exception:
            return
        if not taken:
            blob_handover.release(reused.blob_id)

    def _handle_failures(self, mail: Mail, failed: list[tuple[MailAddress, Exception]]) -> None:
        target = self.on_failure
        if target.lower() == "ignore":
            return
        if target.lower() == "propagate":
            raise failed[0][1]
        copy = mail.copy_for([r for r, _ in failed], name=f"error-{mail.name}")
        copy.error_message = "\r\n".join(f"{r}: {exc}" for r, exc in failed)
        self.context.send(copy, target)
