"""Mail processing: the mailet container, the spooler, and where remote mail goes."""

from __future__ import annotations

from .base import EnvironmentSettings, setting
from .values import Whole


class DeliverySettings(EnvironmentSettings):
    mailet_container: str | None = setting("MAILSERVER_MAILETCONTAINER", None, "The mailet container's YAML.",
                                           "path", shown_default="include/mailetcontainer.yaml")
    spooler_threads: Whole | None = setting("MAILSERVER_SPOOLER_THREADS", None, "Spooler threads.", "integer",
                                            shown_default="the YAML's spooler.threads")
    mx_static: str | None = setting("MAILSERVER_MX_STATIC", None, "Static MX table instead of DNS, e.g. "
                                    "`example.com=127.0.0.1:2526;*=relay.local:25` (unset: DNS).",
                                    "domain=host[:port][,...];...")
