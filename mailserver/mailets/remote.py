"""RemoteDelivery, the mailet half: split per domain and hand over to the ``outgoing`` queue.

The delivery attempts (MX lookup, SMTP, retries, bounces) happen in the workers consuming
``outgoing`` (``mailserver.delivery``, built separately); they read the same parameters, so
this mailet accepts James's full parameter list and validates what it can at start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mailserver.mailets.api import ConfigError, Mailet, Params
from mailserver.model.address import MailAddress
from mailserver.model.mail import GHOST, Mail
from mailserver.queue.api import OUTGOING

if TYPE_CHECKING:
    from mailserver.mailets.context import MailetContext

MAIL_PRIORITY = "MAIL_PRIORITY"

WORKER_PARAMS = frozenset({
    "delayTime", "maxRetries", "maxDnsProblemRetries", "deliveryThreads", "sendpartial", "bounceProcessor",
    "onSuccess", "timeout", "connectiontimeout", "startTLS", "sslEnable", "heloName", "bind", "gatewayPort",
    "gatewayUsername", "gatewayPassword", "loadBalancing", "verifyServerIdentity", "debug"})


class RemoteDelivery(Mailet):
    name = "RemoteDelivery"
    PARAMS = WORKER_PARAMS | {"outgoing", "gateway", "usePriority"}

    def __init__(self, params: Params, context: MailetContext) -> None:
        super().__init__(params, context)
        self.queue_name = params.get("outgoing", OUTGOING) or OUTGOING
        self.gateway = params.get("gateway")
        self.use_priority = params.boolean("usePriority", False)
        params.integer("maxRetries", 5, minimum=0)
        params.integer("maxDnsProblemRetries", 0, minimum=0)
        params.boolean("sendpartial", False)
        for extra in (p for p in params.values if p.startswith("mail.")):
            raise ConfigError(f"RemoteDelivery: Java mail session parameter {extra!r} is not supported")

    def referenced_processors(self) -> list[str]:
        return [p for p in (self.params.get("bounceProcessor"), self.params.get("onSuccess")) if p]

    def service(self, mail: Mail) -> None:
        if not self.use_priority:
            mail.attributes.pop(MAIL_PRIORITY, None)
        queue = self.context.outgoing(self.queue_name)
        log = self.context.mail_logger(mail)
        if self.gateway:
            queue.enqueue(mail.copy_for(mail.recipients, name=mail.name))
            log.info("queued for gateway %s: %s", self.gateway, ", ".join(map(str, mail.recipients)))
        else:
            by_domain: dict[str, list[MailAddress]] = {}
            for recipient in mail.recipients:
                by_domain.setdefault(str(recipient.domain), []).append(recipient)
            for domain, recipients in by_domain.items():
                queue.enqueue(mail.copy_for(recipients, name=f"{mail.name}-to-{domain}"))
                log.info("queued on %s for %s: %s", self.queue_name, domain, ", ".join(map(str, recipients)))
        mail.state = GHOST
