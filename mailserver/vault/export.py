"""James's ``ExportService``: matching vault messages zipped and mailed to an address.

The zip holds one ``<messageId>.eml`` entry per message whose content is still there (James's
``DeletedMessageZipper``; an entry whose content is gone is left out). James's default blob
export (``localFile``) writes the zip on the server's disk and mails its path; here the zip is
attached to the mail, since the nodes of a cluster share no disk (docs/compatibility.md). The mail
goes from the postmaster through the spool queue and the mailet pipeline, as James's
``MailetContext.sendMail``.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import BinaryIO

from mailserver.mailbox.content import CHUNK
from mailserver.model.address import MailAddress, Username
from mailserver.model.mail import ROOT, SENT_BY_MAILET, Mail, MailContent, new_mail_name
from mailserver.queue.api import MailQueue
from mailserver.vault.api import DeletedMessageContentNotFound, DeletedMessageVault
from mailserver.vault.model import DeletedMessage
from mailserver.vault.query import Query

log = logging.getLogger(__name__)
SUBJECT = "Some content had had just been exported"   # James's LocalFileBlobExportMechanism
SPOOL_IN_MEMORY = 1024 * 1024
EML = ".eml"


def zip_messages(vault: DeletedMessageVault, owner: Username, messages: Iterable[DeletedMessage],
                 out: BinaryIO) -> None:
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for message in messages:
            try:
                content = vault.load(owner, message.message_id)
            except DeletedMessageContentNotFound:
                log.info("vault content of %s of %s not found: left out of the export", message.message_id, owner)
                continue
            with content, archive.open(f"{message.message_id}{EML}", "w") as entry:
                shutil.copyfileobj(content, entry, CHUNK)


def export_mail(owner: Username, export_to: MailAddress, postmaster: MailAddress, zipped: bytes,
                file_name: str) -> Mail:
    message = EmailMessage()
    message["From"] = str(postmaster)
    message["To"] = str(export_to)
    message["Subject"] = SUBJECT
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = make_msgid(domain=str(postmaster.domain))
    message.set_content(f"Some deleted messages from user {owner} has been shared to you\n\n"
                        f"They are in the attached file {file_name}.\n")
    message.add_attachment(zipped, maintype="application", subtype="zip", filename=file_name)
    raw = message.as_bytes(policy=message.policy.clone(linesep="\r\n"))
    mail = Mail(name=new_mail_name(), sender=postmaster, recipients=[export_to],
                content=MailContent.of_bytes(raw), state=ROOT)
    mail.set_attribute(SENT_BY_MAILET, True)
    return mail


def export(vault: DeletedMessageVault, owner: Username, query: Query, export_to: MailAddress,
           postmaster: MailAddress, spool: MailQueue, on_match: Callable[[], None] = lambda: None) -> Mail:
    """Zip the matches (counting each with ``on_match``) and enqueue the mail carrying the zip."""
    def counted() -> Iterable[DeletedMessage]:
        for message in vault.search(owner, query):
            on_match()
            yield message

    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as spooled:
        zip_messages(vault, owner, counted(), spooled)   # type: ignore[arg-type]
        spooled.seek(0)
        zipped = spooled.read()
    file_name = f"deleted-message-of-{owner}_{new_mail_name()}.zip"
    mail = export_mail(owner, export_to, postmaster, zipped, file_name)
    spool.enqueue(mail)
    return mail
