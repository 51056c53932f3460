"""Names usable in ``mailetcontainer.yaml``: the matcher and mailet classes, by James's simple name."""

from __future__ import annotations

from mailserver.mailets.api import Mailet, Matcher
from mailserver.mailets.bounce import Bounce, DSNBounce
from mailserver.mailets.delivery import LocalDelivery
from mailserver.mailets.headers import AddDeliveredToHeader, AddHeader, RemoveHeader, RemoveMimeHeader, SetMimeHeader
from mailserver.mailets.mailets import (
    LogMessage,
    MetricsMailet,
    Null,
    RemoveMailAttribute,
    SetErrorMessage,
    SetMailAttribute,
    ToProcessor,
    ToRepository,
)
from mailserver.mailets.matchers import MATCHERS
from mailserver.mailets.remote import RemoteDelivery
from mailserver.mailets.rewrite import PostmasterAlias, RecipientRewriteTable

MAILETS: dict[str, type[Mailet]] = {cls.name: cls for cls in (
    ToProcessor, ToRepository, Null, SetMailAttribute, RemoveMailAttribute, SetErrorMessage, LogMessage,
    MetricsMailet, SetMimeHeader, AddHeader, RemoveMimeHeader, RemoveHeader, AddDeliveredToHeader,
    RecipientRewriteTable, PostmasterAlias, LocalDelivery, RemoteDelivery, Bounce, DSNBounce)}


def matcher_class(name: str) -> type[Matcher] | None:
    return MATCHERS.get(name)


def mailet_class(name: str) -> type[Mailet] | None:
    return MAILETS.get(name)
