"""Metrics exposition and structured logs."""

from __future__ import annotations

import io
import json
import logging
import threading

import pytest

from mailserver.observability.logging import configure, mdc, parse_levels
from mailserver.observability.metrics import Metrics


def test_metrics_exposition(client, anonymous):
    client.put("/domains/m.tld")
    client.put("/maintenance", json={"reason": "x"})
    text = anonymous.get("/metrics").text
    assert 'webadmin_request_duration_seconds_count{method="PUT",route="/domains/{domain}",status="204"} 1.0' in text
    assert "maintenance_mode_enabled 1.0" in text
    assert "process_cpu_seconds_total" in text or "python_info" in text
    assert anonymous.get("/metrics").headers["content-type"].startswith("text/plain")


def test_refused_requests_are_not_timed_as_routes(anonymous):
    anonymous.get("/domains")
    assert 'route="/domains"' not in anonymous.get("/metrics").text


def test_james_named_timers():
    metrics = Metrics()
    with metrics.timed("blobStore:saveBytes"):
        pass
    with metrics.timed("SMTP-rcpt"):
        pass
    text = metrics.exposition().decode()
    assert "blobStore:saveBytes_count 1.0" in text
    assert "SMTP_rcpt_count 1.0" in text


def test_two_apps_in_one_process_do_not_clash():
    first, second = Metrics(), Metrics()   # a shared registry would refuse the second's metric names
    first.maintenance.set(1)
    with first.timed("SMTP-rcpt"):
        pass
    assert "maintenance_mode_enabled 1.0" in first.exposition().decode()
    assert "maintenance_mode_enabled 0.0" in second.exposition().decode()
    assert "SMTP_rcpt_count" not in second.exposition().decode()


@pytest.fixture
def captured():
    stream = io.StringIO()
    handlers = []
    levels = {name: logging.getLogger(name).level for name in ("opensearch", "mail.log")}
    for name in levels:
        logging.getLogger(name).setLevel(logging.NOTSET)   # as in a fresh server process

    def install(fmt: str, levels: str = "") -> io.StringIO:
        handlers.append(configure(fmt=fmt, levels=levels, stream=stream))
        return stream

    yield install
    root = logging.getLogger()
    for h in handlers:
        root.removeHandler(h)
    logging.getLogger("mailserver.test.smtp").setLevel(logging.NOTSET)
    logging.getLogger("mailserver.test").setLevel(logging.NOTSET)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def test_json_lines_carry_mdc_fields(captured):
    stream = captured("json")
    with mdc(protocol="SMTP", ip="10.0.0.1"), mdc(user="bob@d.tld", mailId="m-1"):
        logging.getLogger("mailserver.test").warning("accepted %s", "mail")
    logging.getLogger("mailserver.test").warning("outside")
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "accepted mail"
    assert (first["protocol"], first["ip"], first["user"], first["mailId"]) == ("SMTP", "10.0.0.1", "bob@d.tld", "m-1")
    assert first["level"] == "WARNING" and first["logger"] == "mailserver.test"
    assert "protocol" not in second


def test_console_mode_and_levels_per_logger(captured):
    stream = captured("console", "mailserver.test=WARNING,mailserver.test.smtp=DEBUG")
    with mdc(taskId="t-1"):
        logging.getLogger("mailserver.test").info("hidden")
        logging.getLogger("mailserver.test.smtp").debug("shown")
    out = stream.getvalue()
    assert "hidden" not in out
    assert "shown" in out and "taskId=t-1" in out


def test_a_search_request_is_not_logged_unless_asked_for(captured):
    from opensearchpy.connection import Urllib3HttpConnection

    connection = Urllib3HttpConnection(host="127.0.0.1", port=9200)
    stream = captured("json")
    connection.log_request_success("POST", "http://127.0.0.1:9200/_bulk", "/_bulk", b"{}", 200, "{}", 0.004)
    connection.log_request_fail("POST", "http://127.0.0.1:9200/_bulk", "/_bulk", b"{}", 0.004, 503, "{}")
    quiet = [json.loads(line)["level"] for line in stream.getvalue().splitlines()]
    assert quiet == ["WARNING"]   # the failure only

    stream = captured("json", "opensearch=INFO")
    connection.log_request_success("POST", "http://127.0.0.1:9200/_bulk", "/_bulk", b"{}", 200, "{}", 0.004)
    assert "POST http://127.0.0.1:9200/_bulk" in stream.getvalue().splitlines()[-1]


def test_smtp_command_lines_are_not_logged_unless_asked_for(captured):
    from aiosmtpd.smtp import log as aiosmtpd_log
    from aiosmtpd.smtp import sanitized_log

    stream = captured("json")
    sanitized_log(aiosmtpd_log.info, "%r >> %r", ("192.0.2.1", 2525), b"MAIL FROM:<a@example.com>")
    aiosmtpd_log.warning("a protocol problem")
    assert [json.loads(line)["level"] for line in stream.getvalue().splitlines()] == ["WARNING"]

    stream = captured("json", "mail.log=INFO")
    sanitized_log(aiosmtpd_log.info, "%r >> %r", ("192.0.2.1", 2525), b"MAIL FROM:<a@example.com>")
    assert "MAIL FROM:<a@example.com>" in stream.getvalue().splitlines()[-1]


def test_parse_levels():
    assert parse_levels("mailserver=INFO, mailserver.smtp=debug") == {"mailserver": 20, "mailserver.smtp": 10}
    assert parse_levels("DEBUG") == {"": 10}
    with pytest.raises(ValueError):
        parse_levels("mailserver=LOUD")


def test_webadmin_requests_log_with_mdc(client, caplog):
    from mailserver.observability.logging import MdcFilter

    caplog.handler.addFilter(MdcFilter())
    with caplog.at_level(logging.INFO, logger="mailserver.webadmin.app"):
        client.get("/domains", headers={"Password": "wrong", "X-Real-IP": "192.0.2.7"})
    record = next(r for r in caplog.records if "refused" in r.getMessage())
    assert record.mdc["ip"] == "192.0.2.7"
    assert record.mdc["protocol"] == "webadmin" and record.mdc["verb"] == "GET" and record.mdc["action"] == "/domains"


def test_in_the_background_lines_keep_the_caller_context_and_order(captured):
    """The server's mode: a writer thread writes the lines; each still carries the MDC and the
    exception of the thread that logged it, in the order they were logged."""
    stream = io.StringIO()
    handler = configure(fmt="json", stream=stream, background=True)
    log = logging.getLogger("mailserver.test")
    logged_by: list[str] = []

    def session(n: int) -> None:
        with mdc(protocol="SMTP", sessionId=f"s-{n}"):
            log.warning("line %d", n)
            logged_by.append(threading.current_thread().name)

    try:
        threads = [threading.Thread(target=session, args=(n,), name=f"smtp-{n}") for n in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("failed")
        handler.flush()   # returns once every queued line is written
        lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()

    by_session = {line["sessionId"]: line for line in lines[:5]}
    assert {f"s-{n}": f"line {n}" for n in range(5)} == {k: v["message"] for k, v in by_session.items()}
    assert {line["thread"] for line in lines[:5]} == set(logged_by)   # the logging thread, not the writer
    assert lines[5]["message"] == "failed" and "ValueError: boom" in lines[5]["exception"]
    assert len(lines) == 6


def test_closing_the_background_handler_writes_what_is_queued(captured):
    stream = io.StringIO()
    handler = configure(fmt="console", stream=stream, background=True)
    try:
        for n in range(200):
            logging.getLogger("mailserver.test").warning("queued %d", n)
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
    assert [line.split(": ", 1)[1] for line in stream.getvalue().splitlines()] == [f"queued {n}" for n in range(200)]
