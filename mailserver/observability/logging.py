"""Structured logs with James's MDC field names, carried by ``contextvars``.

``mdc(protocol="SMTP", ip=..., user=...)`` adds fields for the duration of a block (a request,
a mail, a task); every record logged inside it carries them, across threads started with
``contextvars.copy_context`` and across ``await``. Field names are James's (runtime reference
§8.2) so existing Kibana/Grafana dashboards keep working.

Two output modes: ``json`` (one JSON object per line, for log shippers) and ``console``
(human-readable, fields appended as ``key=value``). Levels per logger come from
``MAILSERVER_LOG_LEVELS="mailserver=INFO,mailserver.smtp=DEBUG"``.
"""

from __future__ import annotations

import contextvars
import json
import logging
import logging.handlers
import queue
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

# The MDC keys James sets in its protocols, mailet container, event bus, webadmin and tasks.
MDC_FIELDS = ("protocol", "ip", "host", "sessionId", "user", "action", "verb", "mailId", "mail", "sender",
              "recipients", "queue", "processor", "mailet", "matcher", "state", "taskId", "taskType",
              "eventId", "group", "remoteIP", "userAgent")

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_context: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar("mailserver_mdc", default=_EMPTY)


@contextmanager
def mdc(**fields: Any) -> Iterator[None]:
    """Add fields to every log record emitted in this block (None values are left out)."""
    merged = {**_context.get(), **{k: v for k, v in fields.items() if v is not None}}
    token = _context.set(merged)
    try:
        yield
    finally:
        _context.reset(token)


def current() -> Mapping[str, Any]:
    return _context.get()


class MdcFilter(logging.Filter):
    """Copies the MDC onto the record (``record.mdc``) so any formatter can use it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.mdc = dict(_context.get())
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "thread": record.threadName,
            "message": record.getMessage(),
        }
        entry.update(getattr(record, "mdc", None) or {})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class ConsoleFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-5s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = getattr(record, "mdc", None) or {}
        if fields:
            text += " [" + " ".join(f"{k}={v}" for k, v in fields.items()) + "]"
        return text


def parse_levels(spec: str) -> dict[str, int]:
    """``"mailserver=INFO,mailserver.smtp=DEBUG"`` -> {logger: level}; ``"DEBUG"`` alone sets the root."""
    levels: dict[str, int] = {}
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        name, sep, level = part.rpartition("=")
        if not sep:
            name, level = "", part
        value = logging.getLevelName(level.strip().upper())
        if not isinstance(value, int):
            raise ValueError(f"unknown log level {level!r} in {part!r}")
        levels[name.strip()] = value
    return levels

# pika logs every connection open and close at INFO (the RabbitMQ health probe opens one every
# few seconds); the Cassandra driver warns about protocol negotiation at every connect;
# opensearch-py logs every request at INFO (a bulk per indexed mail, every health probe).
# mail.log is aiosmtpd's: at INFO it writes every SMTP command line of every session (eight records
# a mail, more than the server's own), which the server's connection/accepted records already summarise.
QUIET_DRIVERS = "pika=WARNING,cassandra=WARNING,botocore=WARNING,urllib3=WARNING,opensearch=WARNING,mail.log=WARNING"


class BackgroundHandler(logging.handlers.QueueHandler):
    """Records formatted in the logging thread (its MDC, its exception), written by one thread of their own.

    Why: a server thread that writes its own log lines waits for the handler's lock while
    another thread writes, then gives up the GIL for the write and waits to get it back. The
    SMTP server's event-loop thread spent a fifth of its time there under load (issue 16),
    holding up every session it serves. Here a caller only formats and queues the line.

    ``flush()`` returns once everything queued before it is written; ``close()`` (at the latest
    ``logging.shutdown()`` at exit) writes the rest and stops the writer. A ``kill -9`` loses the
    lines still queued, milliseconds' worth, as it loses what a stream had not flushed.
    """

    def __init__(self, target: logging.Handler) -> None:
        self._pending: queue.Queue[logging.LogRecord] = queue.Queue()
        super().__init__(self._pending)
        self.target = target
        self._writer = logging.handlers.QueueListener(self._pending, target)
        self._writer.start()
        self._writing = True

    def flush(self) -> None:
        if self._writing:
            self._pending.join()
        self.target.flush()

    def close(self) -> None:
        if self._writing:
            self._writing = False
            self._writer.stop()   # writes what is queued, then ends the writer thread
        self.target.close()
        super().close()


def configure(*, fmt: str = "console", levels: str = "", stream: Any = None,
              background: bool = False) -> logging.Handler:
    """Install one handler on the root logger; ``fmt`` is ``json`` or ``console``.

    The server passes ``MAILSERVER_LOG_FORMAT`` and ``MAILSERVER_LOG_LEVELS`` (``mailserver.settings``).
    ``levels``: root INFO and the drivers' chatty loggers at WARNING (``QUIET_DRIVERS``) unless
    named there. ``background``: lines are written by a thread of their own (``BackgroundHandler``;
    the server does that). Returns the handler (tests remove it again).
    """
    fmt = fmt.lower()
    if fmt not in ("json", "console"):
        raise ValueError(f"MAILSERVER_LOG_FORMAT must be json or console, not {fmt!r}")
    formatter = JsonFormatter() if fmt == "json" else ConsoleFormatter()
    handler: logging.Handler = logging.StreamHandler(stream or sys.stderr)
    if background:
        handler.setFormatter(logging.Formatter("%(message)s"))   # the line as the caller's thread made it
        handler = BackgroundHandler(handler)
    handler.addFilter(MdcFilter())
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    for name, level in {**parse_levels(QUIET_DRIVERS), **parse_levels(levels)}.items():
        logging.getLogger(name or None).setLevel(level)
    return handler
