"""Header mailets: SetMimeHeader (alias AddHeader), RemoveMimeHeader, AddDeliveredToHeader.

SetMimeHeader / RemoveMimeHeader rewrite the header blob (``mime.rewrite_header``) and point
``mail.content`` at it; AddDeliveredToHeader only records per-recipient headers, which
LocalDelivery writes into each recipient's copy at storage time (as James does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mailserver.mailets.api import ConfigError, Mailet, Params
from mailserver.mailets.mime import edit_header, encode_field, rewrite_header
from mailserver.model.mail import Mail, PerRecipientHeader

if TYPE_CHECKING:
    from mailserver.mailets.context import MailetContext

DELIVERED_TO = "Delivered-To"


class SetMimeHeader(Mailet):
    """Add header ``name: value`` (replacing fields of that name, as JavaMail's setHeader)."""

    name = "SetMimeHeader"
    PARAMS = frozenset({"name", "value"})

    def __init__(self, params: Params, context: MailetContext) -> None:
        super().__init__(params, context)
        self.header = params.required("name")
        self.value = params.get("value", "") or ""
        try:
            encode_field(self.header, self.value)
        except ValueError as exc:
            raise ConfigError(f"{self.name}: {exc}") from None

    def service(self, mail: Mail) -> None:
        mail.content = rewrite_header(self.context.contents, mail.content, lambda header: edit_header(
            header, remove=(self.header,), add=((self.header, self.value),)))


class AddHeader(SetMimeHeader):
    """Same as SetMimeHeader (James has no AddHeader; kept as the name operators look for)."""

    name = "AddHeader"


class RemoveMimeHeader(Mailet):
    """Remove every field named in ``name`` (comma separated)."""

    name = "RemoveMimeHeader"
    PARAMS = frozenset({"name"})

    def __init__(self, params: Params, context: MailetContext) -> None:
        super().__init__(params, context)
        self.names = tuple(n.strip() for n in params.required("name").split(",") if n.strip())

    def service(self, mail: Mail) -> None:
        mail.content = rewrite_header(self.context.contents, mail.content,
                                      lambda header: edit_header(header, remove=self.names))


class RemoveHeader(RemoveMimeHeader):
    name = "RemoveHeader"


class AddDeliveredToHeader(Mailet):
    """``Delivered-To: <recipient>`` in each recipient's stored copy (per-recipient header)."""

    name = "AddDeliveredToHeader"

    def service(self, mail: Mail) -> None:
        for recipient in mail.recipients:
            mail.per_recipient_headers.append(PerRecipientHeader(str(recipient), DELIVERED_TO, str(recipient)))
