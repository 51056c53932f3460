"""Recipient rewriting mailets: RecipientRewriteTable and PostmasterAlias.

``rewrite_recipients`` is the shared step (James's RecipientRewriteTableProcessor), also run by
LocalDelivery when configured with ``resolveRecipients``:

* a recipient without mappings stays as it is;
* a recipient whose resolution fails (``error:`` mapping, mapping loop) is removed and sent,
  in a new mail through the spool, to the error processor with the reason as error message;
* resolved addresses in local domains replace the recipient; resolved addresses in remote
  domains are sent in a new mail through the spool (state ``transport``, so they are relayed);
* no recipient left: the mail is ghosted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mailserver.mailets.api import Mailet, Params
from mailserver.model.address import MailAddress
from mailserver.model.mail import GHOST, TRANSPORT, Mail, new_mail_name
from mailserver.rrt.resolver import MappingErrorException

if TYPE_CHECKING:
    from mailserver.mailets.context import MailetContext

RRT_ERROR = "rrt-error"


def rewrite_recipients(context: MailetContext, mail: Mail, error_processor: str) -> None:
    log = context.mail_logger(mail)
    kept: list[MailAddress] = []
    remote: list[MailAddress] = []
    failed: list[tuple[MailAddress, str]] = []
    for recipient in mail.recipients:
        try:
            mappings = context.rewriter.resolve(recipient)
        except MappingErrorException as exc:
            log.warning("could not rewrite recipient %s: %s", recipient, exc.message)
            failed.append((recipient, exc.message))
            continue
        if not mappings:
            kept.append(recipient)
            continue
        targets = [MailAddress.of(m.value) for m in mappings]
        local, others = context.rewriter.split_local(targets)
        kept.extend(local)
        remote.extend(others)
        if targets != [recipient]:
            log.info("recipient %s rewritten to %s", recipient, ", ".join(map(str, targets)))
    if failed:
        errors = mail.copy_for([r for r, _ in failed], name=new_mail_name())
        errors.error_message = "\r\n".join(f"{r}: {reason}" for r, reason in failed)
        context.send(errors, error_processor)
    if remote:
        relayed = mail.copy_for(list(dict.fromkeys(remote)), name=new_mail_name())
        context.send(relayed, TRANSPORT)
    mail.recipients = list(dict.fromkeys(kept))
    if not mail.recipients:
        mail.state = GHOST


class RecipientRewriteTable(Mailet):
    name = "RecipientRewriteTable"
    PARAMS = frozenset({"errorProcessor"})

    def __init__(self, params: Params, context: MailetContext) -> None:
        super().__init__(params, context)
        self.error_processor = params.get("errorProcessor", "error") or "error"

    def referenced_processors(self) -> list[str]:
        return [self.error_processor]

    def service(self, mail: Mail) -> None:
        rewrite_recipients(self.context, mail, self.error_processor)


class PostmasterAlias(Mailet):
    """``postmaster@<local domain>`` without an account becomes the configured postmaster."""

    name = "PostmasterAlias"

    def service(self, mail: Mail) -> None:
        postmaster = self.context.postmaster
        rewritten = []
        for recipient in mail.recipients:
            if (recipient.local_part.lower() == "postmaster" and self.context.is_local_server(recipient.domain)
                    and not self.context.is_local_user(recipient)):
                rewritten.append(postmaster)
            else:
                rewritten.append(recipient)
        mail.recipients = list(dict.fromkeys(rewritten))
