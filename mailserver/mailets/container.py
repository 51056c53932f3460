"""The mailet container: processors of matcher/mailet pairs (James's MailetProcessorImpl).

Per pair, in order, for every mail in flight in the processor:

1. the matcher picks recipients: none -> the mail skips the mailet; all -> the mail goes to the
   mailet; some -> the mail is split: a copy (``name!xxxx``) with the matched recipients goes
   to the mailet, the original keeps the others and goes on down the processor;
2. after the mailet, a mail without recipients is ghosted; a ghost stops; a mail whose state
   names another processor is handed to it at once, synchronously (no queue);
3. a mail reaching the end of a processor is ghosted, with a warning outside ``error``.

A matcher or mailet that raises is handled by its pair's ``onMatchException`` /
``onMailetException``: ``error`` (default) or any processor name moves the mail there with
the error message and the ``org.apache.james.MailetError`` attribute (an exception object,
dropped when the mail is stored, as in James); ``ignore`` (mailets), ``nomatch`` /
``matchall`` (matchers) carry on; ``propagate`` re-raises, so the spooler retries the mail.
"""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass
from pathlib import Path

from mailserver.mailets import config as cfg
from mailserver.mailets.api import ConfigError, Mailet, Matcher, Params
from mailserver.mailets.context import MailetContext
from mailserver.mailets.matchers import COMPOSITES, Not
from mailserver.mailets.registry import MAILETS, MATCHERS
from mailserver.model.address import MailAddress, Username
from mailserver.model.mail import ERROR, GHOST, MAILET_ERROR, ROOT, Mail
from mailserver.observability.logging import mdc

LOG = logging.getLogger("mailserver.mailets.container")

# A mail handed from processor to processor more often than this is in a ToProcessor cycle.
MAX_HANDOFFS = 64
MATCH_KEYWORDS = ("nomatch", "matchall", "propagate")
MAILET_KEYWORDS = ("ignore", "propagate")


class ProcessingLoopError(RuntimeError):
    """A mail went round the processors too many times (a configuration cycle)."""


@dataclass
class Pair:
    matcher: Matcher
    mailet: Mailet
    on_match_exception: str
    on_mailet_exception: str
    where: str


def record_error(mail: Mail, exc: BaseException, offender: str, state: str) -> None:
    """James's ProcessorUtil.handleException: new state, error text with the trace, MailetError."""
    trace = "".join(traceback.format_exception(exc))
    mail.state = state
    mail.error_message = f"Exception calling {offender}: {exc}\n{trace}"
    mail.attributes[MAILET_ERROR] = exc  # not JSON: dropped when stored, as James's NoSerializer


class Processor:
    def __init__(self, name: str, pairs: list[Pair], container: MailetContainer) -> None:
        self.name = name
        self.pairs = pairs
        self.container = container

    def service(self, mail: Mail, depth: int) -> None:
        in_flight = [mail]
        for pair in self.pairs:
            still_here: list[Mail] = []
            for current in in_flight:
                still_here.extend(self._run_pair(pair, current, depth))
            in_flight = still_here
            if not in_flight:
                return
        for current in in_flight:
            if self.name != ERROR:
                self.container.context.mail_logger(current).warning(
                    "reached the end of processor %s without being ghosted: ghosting it", self.name)
            current.state = GHOST

    def _run_pair(self, pair: Pair, mail: Mail, depth: int) -> list[Mail]:
        """Mails that continue in this processor after ``pair``."""
        matched = self._match(pair, mail, depth)
        if matched is None:
            return []  # the matcher failed and the mail left for another processor
        if not matched:
            return [mail]
        continuing: list[Mail] = []
        chosen = set(matched)
        if chosen == set(mail.recipients):
            target = mail
        else:
            target = mail.copy_for([r for r in mail.recipients if r in chosen])
            mail.recipients = [r for r in mail.recipients if r not in chosen]
            continuing.append(mail)
        self._mailet(pair, target)
        if not target.recipients:
            target.state = GHOST
        if target.state == self.name:
            continuing.append(target)
        elif target.state != GHOST:
            self.container.route(target, depth + 1)
        return continuing

    def _match(self, pair: Pair, mail: Mail, depth: int) -> list[MailAddress] | None:
        with mdc(protocol="MAILET", action="MAILET", state=self.name, mail=mail.name, matcher=str(pair.matcher),
                 sender=str(mail.sender) if mail.sender else "<>", recipients=",".join(map(str, mail.recipients))):
            try:
                with self.container.context.timed(type(pair.matcher).__name__):
                    matched = pair.matcher.match(mail)
            except Exception as exc:
                policy = pair.on_match_exception
                if policy == "nomatch":
                    LOG.warning("matcher %s failed on %s (nomatch): %s", pair.matcher, mail.name, exc)
                    return []
                if policy == "matchall":
                    LOG.warning("matcher %s failed on %s (matchall): %s", pair.matcher, mail.name, exc)
                    return list(mail.recipients)
                if policy == "propagate":
                    raise
                LOG.error("matcher %s failed on %s, sending it to %s: %s", pair.matcher, mail.name, policy, exc)
                record_error(mail, exc, str(pair.matcher), policy)
                if policy == self.name:
                    return []  # already in the target processor: carry on as unmatched
                self.container.route(mail, depth + 1)
                return None
        present = set(mail.recipients)
        return [r for r in dict.fromkeys(matched) if r in present]

    def _mailet(self, pair: Pair, mail: Mail) -> None:
        """Run the mailet; on failure the mail's state names where it goes next (or it raises)."""
        with mdc(protocol="MAILET", action="MAILET", state=self.name, mail=mail.name, mailet=pair.mailet.name,
                 sender=str(mail.sender) if mail.sender else "<>", recipients=",".join(map(str, mail.recipients))):
            try:
                with self.container.context.timed(pair.mailet.name):
                    pair.mailet.service(mail)
            except Exception as exc:
                policy = pair.on_mailet_exception
                if policy == "ignore":
                    LOG.warning("mailet %s failed on %s (ignored): %s", pair.mailet, mail.name, exc)
                    return
                if policy == "propagate":
                    raise
                LOG.error("mailet %s failed on %s, sending it to %s: %s", pair.mailet, mail.name, policy, exc)
                record_error(mail, exc, pair.mailet.name, policy)  # _run_pair routes it by its new state


class MailetContainer:
    def __init__(self, context: MailetContext, spec: cfg.ContainerSpec | None = None) -> None:
        self.context = context
        self.spec = spec
        self.processors: dict[str, Processor] = {}

    def service(self, mail: Mail) -> None:
        """Process ``mail`` (and the copies splits make of it) until each is ghosted.

        Exceptions escape only from ``propagate`` pairs or container faults; the caller (the
        spooler) then retries the mail.
        """
        self.route(mail, 0)

    def route(self, mail: Mail, depth: int) -> None:
        if mail.state == GHOST:
            return
        if depth > MAX_HANDOFFS:
            raise ProcessingLoopError(f"mail {mail.name} was handed between processors more than {MAX_HANDOFFS} "
                                      f"times (last state {mail.state}): is there a ToProcessor cycle?")
        processor = self.processors.get(mail.state or ROOT)
        if processor is None:
            message = f"Unknown processor state {mail.state!r}: no such processor"
            self.context.mail_logger(mail).error("%s, sending the mail to %s", message, ERROR)
            mail.error_message = message
            mail.state = ERROR
            processor = self.processors[ERROR]
        processor.service(mail, depth)


# -- building from the configuration ----------------------------------------------------------------
def _matcher(spec: cfg.ContainerSpec, ref: str | cfg.CompositeSpec, where: cfg.Where, context: MailetContext,
             seen: tuple[str, ...] = ()) -> Matcher:
    if isinstance(ref, cfg.CompositeSpec):
        children = [_matcher(spec, child, ref.where, context, seen) for child in ref.children]
        return COMPOSITES[ref.op](children, context)
    if ref in spec.matchers:
        if ref in seen:
            raise where.error(f"composite matcher {ref!r} refers to itself")
        composite = spec.matchers[ref]
        return _matcher(spec, composite, composite.where, context, (*seen, ref))
    name, _, condition = ref.partition("=")
    cls = MATCHERS.get(name.strip())
    if cls is None:
        raise where.error(f"unknown matcher {name.strip()!r}")
    try:
        return cls(condition or None, context)
    except ConfigError as exc:
        raise where.error(str(exc)) from None


def _mailet(pair: cfg.PairSpec, context: MailetContext) -> Mailet:
    where = pair.mailet_where or pair.where
    cls = MAILETS.get(pair.mailet)
    if cls is None:
        raise where.error(f"unknown mailet {pair.mailet!r}")
    try:
        return cls(Params(pair.mailet, pair.params, cls.PARAMS), context)
    except ConfigError as exc:
        raise where.error(str(exc)) from None


def build(spec: cfg.ContainerSpec, context: MailetContext) -> MailetContainer:
    """Instantiate every matcher and mailet and check the processor graph; ConfigError otherwise."""
    if GHOST in spec.processors:
        raise spec.processors[GHOST].where.error("no processor may be named 'ghost'")
    for required in (ROOT, ERROR):
        if required not in spec.processors:
            raise ConfigError(f"{spec.source}: processor {required!r} is required")
    container = MailetContainer(context, spec)
    for name, processor_spec in spec.processors.items():
        pairs: list[Pair] = []
        for pair_spec in processor_spec.pairs:
            match_where = pair_spec.match_where or pair_spec.where
            matcher = _matcher(spec, pair_spec.match, match_where, context)
            if pair_spec.inverted:
                matcher = Not([matcher], context)
            mailet = _mailet(pair_spec, context)
            targets = [(t, pair_spec.mailet_where or pair_spec.where) for t in mailet.referenced_processors()]
            if pair_spec.on_match_exception not in MATCH_KEYWORDS:
                targets.append((pair_spec.on_match_exception, pair_spec.where))
            if pair_spec.on_mailet_exception not in MAILET_KEYWORDS:
                targets.append((pair_spec.on_mailet_exception, pair_spec.where))
            for target, where in targets:
                if target not in spec.processors:
                    raise where.error(f"{pair_spec.mailet} refers to processor {target!r}, which is not defined")
            pairs.append(Pair(matcher, mailet, pair_spec.on_match_exception, pair_spec.on_mailet_exception,
                              str(pair_spec.where)))
        container.processors[name] = Processor(name, pairs, container)
    return container


def postmaster_address(spec: cfg.ContainerSpec) -> MailAddress:
    """``postmaster`` with ``defaultDomain`` appended when it has no domain (James)."""
    raw = spec.postmaster
    if "@" not in raw:
        if not spec.default_domain:
            raise ConfigError(f"{spec.source}: postmaster {raw!r} has no domain and no context.defaultDomain is set")
        raw = f"{raw}@{spec.default_domain}"
    return Username.of(raw).as_mail_address()


def load_container(context: MailetContext, path: str | Path = cfg.DEFAULT_FILE) -> MailetContainer:
    return build(cfg.load(path), context)

