"""Flow-control and bookkeeping mailets: ToProcessor, ToRepository, Null, attributes, logging, metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mailserver.mailets.api import ConfigError, Mailet, Params
from mailserver.model.mail import GHOST, Mail
from mailserver.repository.api import validate_url

if TYPE_CHECKING:
    from mailserver.mailets.context import MailetContext


def append_error_message(mail: Mail, notice: str) -> None:
    """James appends a notice to any error message already there (one per line)."""
    mail.error_message = f"{mail.error_message}\r\n{notice}" if mail.error_message else notice


class ToProcessor(Mailet):
    """Move the mail to ``processor`` in memory (no queue round-trip); ``notice`` goes to errorMessage."""

    name = "ToProcessor"
    PARAMS = frozenset({"processor", "notice"})

    def __init__(self, params: Params, context: MailetContext) -> None:
        super().__init__(params, context)
        self.processor = params.required("processor")
        self.notice = params.get("notice")

    def referenced_processors(self) -> list[str]:
        return [self.processor]

    def service(self, mail: Mail) -> None:
        if self.notice:
            append_error_message(mail, self.notice)
        mail.state = self.processor


class ToRepository(Mailet):
    """Store a copy in ``repositoryPath``; the mail is ghosted unless ``passThrough`` is true."""

    name = "ToRepository"
    PARAMS = frozenset({"repositoryPath", "passThrough"})

    def __init__(self, params: Params, context: MailetContext) -> None:
        super().__init__(params, context)
        try:
            self.url = validate_url(params.required("repositoryPath"))
        except ValueError as exc:
            raise ConfigError(f"ToRepository: {exc}") from None
        self.pass_through = params.boolean("passThrough", False)

    def service(self, mail: Mail) -> None:
        key = self.context.repositories.select(self.url).store(mail)
        self.context.mail_logger(mail).info("stored in %s as %s", self.url, key)
        if not self.pass_through:
            mail.state = GHOST


class Null(Mailet):
    name = "Null"

    def service(self, mail: Mail) -> None:
        mail.state = GHOST


class SetMailAttribute(Mailet):
    """Each parameter ``name: value`` becomes a String attribute (James's child elements)."""

    name = "SetMailAttribute"
    PARAMS = None

    def __init__(self, params: Params, context: MailetContext) -> None:
        super().__init__(params, context)
        if not params.values:
            raise ConfigError("SetMailAttribute: at least one attribute (name: value) is required")

    def service(self, mail: Mail) -> None:
        for name, value in self.params.values.items():
            mail.set_attribute(name, value)


class RemoveMailAttribute(Mailet):
    """``name``: comma separated attribute names to remove."""

    name = "RemoveMailAttribute"
    PARAMS = frozenset({"name"})

    def __init__(self, params: Params, context: MailetContext) -> None:
        super().__init__(params, context)
        self.names = [n.strip() for n in params.required("name").split(",") if n.strip()]

    def service(self, mail: Mail) -> None:
        for name in self.names:
            mail.attributes.pop(name, None)


class SetErrorMessage(Mailet):
    name = "SetErrorMessage"
    PARAMS = frozenset({"errorMessage"})

    def __init__(self, params: Params, context: MailetContext) -> None:
        super().__init__(params, context)
        self.message = params.required("errorMessage")

    def service(self, mail: Mail) -> None:
        mail.error_message = self.message


class LogMessage(Mailet):
    """Log the envelope and, optionally, the headers and the start of the body."""

    name = "LogMessage"
    PARAMS = frozenset({"headers", "body", "bodyMax", "comment"})

    def __init__(self, params: Params, context: MailetContext) -> None:
        super().__init__(params, context)
        self.headers = params.boolean("headers", True)
        self.body = params.boolean("body", True)
        self.body_max = params.integer("bodyMax", 0, minimum=0)
        self.comment = params.get("comment")

    def service(self, mail: Mail) -> None:
        log = self.context.mail_logger(mail)
        if self.comment:
            log.info("%s", self.comment)
        log.info("sender=%s recipients=%s size=%d", mail.sender or "<>",
                 ", ".join(map(str, mail.recipients)), mail.content.size)
        if self.headers or self.body:
            raw = self.context.contents.read(mail.content)
            header_end = raw.find(b"\r\n\r\n") + 4 if b"\r\n\r\n" in raw else raw.find(b"\n\n") + 2
            if header_end <= 1:
                header_end = len(raw)
            if self.headers:
                log.info("headers:\n%s", raw[:header_end].decode("utf-8", "replace"))
            if self.body:
                body = raw[header_end:]
                if self.body_max:
                    body = body[: self.body_max]
                log.info("body:\n%s", body.decode("utf-8", "replace"))


class MetricsMailet(Mailet):
    """Count mails under ``metricName`` (James's meter, e.g. ``mailetContainerErrors``)."""

    name = "MetricsMailet"
    PARAMS = frozenset({"metricName"})

    def __init__(self, params: Params, context: MailetContext) -> None:
        super().__init__(params, context)
        self.metric = params.required("metricName")

    def service(self, mail: Mail) -> None:
        self.context.count(self.metric)
