"""What operators rely on while the server runs: maintenance mode and health of every backend."""

from __future__ import annotations

import json
import re
import smtplib
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from include.stack.manager import StackManager
from tests.e2e.mailflow.conftest import MailWorld, eventually
from tests.support.mailserver_process import ServerProcess, http_json
from tests.support.ports import unused_port

pytestmark = pytest.mark.integration

DASHBOARD = Path(__file__).resolve().parents[3] / "include" / "grafana" / "dashboards" / "mailserver.json"


def greeting(port: int) -> int:
    try:
        with smtplib.SMTP("127.0.0.1", port, timeout=30) as client:
            return client.noop()[0] and 220
    except smtplib.SMTPConnectError as exc:
        return exc.smtp_code


def health(base: str, component: str | None = None) -> tuple[int, dict]:
    url = f"{base}/healthcheck" + (f"/checks/{urllib.request.quote(component)}" if component else "")
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def webadmin(world: MailWorld) -> str:
    return f"http://127.0.0.1:{world.env['MAILSERVER_WEBADMIN_PORT']}"


def test_maintenance_mode_refuses_smtp_and_survives_a_restart(mail_world: MailWorld, tmp_path):
    base = webadmin(mail_world)
    user = mail_world.add_user("maint")
    http_json("PUT", f"{base}/maintenance", {"reason": "offline repair"})
    try:
        assert greeting(mail_world.smtp_port) == 421
        # A server started now reads the cluster-wide state from Cassandra.
        env = {**mail_world.env, "MAILSERVER_ROLES": "smtp,webadmin", "MAILSERVER_SMTP_PORT": str(unused_port()),
               "MAILSERVER_WEBADMIN_PORT": str(unused_port())}
        restarted = ServerProcess(env, tmp_path / "server.log").start()
        try:
            assert greeting(restarted.smtp_port) == 421, restarted.tail()
            state = http_json("GET", f"{restarted.webadmin_url}/maintenance")
            assert state["enabled"] is True and state["reason"] == "offline repair"
        finally:
            restarted.terminate()
    finally:
        http_json("DELETE", f"{base}/maintenance")
    assert greeting(mail_world.smtp_port) == 220
    assert mail_world.send("someone@sender.example", [user], "after maintenance") == {}
    assert eventually(lambda: len(mail_world.inbox(user)) == 1)


@pytest.mark.parametrize(("service", "component"), [
    ("rabbitmq", "RabbitMQ backend"),
    ("s3", "ObjectStorage"),
    ("opensearch", "OpenSearch Backend"),
    ("cassandra", "Cassandra backend"),
])
def test_health_follows_a_backend_down_and_back(mail_world: MailWorld, local_stack: StackManager, service,
                                                component):
    base = webadmin(mail_world)
    assert health(base)[0] == 200
    local_stack.down([service])
    try:
        status, body = eventually(lambda: (r := health(base, component))[0] == 503 and r, timeout=60) or \
            health(base, component)
        assert status == 503 and body["status"] == "unhealthy" and body["cause"]
        assert health(base)[0] == 503
    finally:
        local_stack.up([service])
    status, body = eventually(lambda: (r := health(base))[0] == 200 and r, timeout=180) or health(base)
    assert status == 200, body        # healthy again without restarting the mail server
    # SMTP's back-pressure reads the health monitor's last round, not this request: it follows shortly.
    assert eventually(lambda: smtp_accepts(mail_world), timeout=60), "SMTP still answers 421 once healthy"


def smtp_accepts(mail_world: MailWorld) -> bool:
    try:
        with mail_world.smtp():
            return True
    except smtplib.SMTPConnectError:
        return False


def scrape(base: str) -> dict[str, float]:
    """``name{labels}`` -> value of every sample of ``/metrics`` (public: no credentials)."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"{base}/metrics", timeout=30) as response:
        text = response.read().decode()
    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return samples


def test_metrics_move_after_mail_is_sent(mail_world: MailWorld):
    base = webadmin(mail_world)
    user = mail_world.add_user("metered")
    before = scrape(base)
    assert mail_world.send("someone@sender.example", [user], "count me") == {}
    assert eventually(lambda: len(mail_world.inbox(user)) == 1)
    moved = ["SMTP_DATA_count", "SMTP_rcpt_count", "enqueuedMail:spool_total", "dequeuedMail:spool_total",
             "enqueueTime:spool_count", "spoolProcessing_count", "LocalDelivery_count", "RecipientIsLocal_count",
             "localDeliveredMails_total"]
    after = eventually(lambda: (a := scrape(base)) and all(a.get(m, 0) > before.get(m, 0) for m in moved) and a)
    assert after, {m: (before.get(m), scrape(base).get(m)) for m in moved}
    assert "mailQueueSize:spool" in after and "process_resident_memory_bytes" in after


def test_the_grafana_dashboard_queries_metrics_the_server_exposes(mail_world: MailWorld):
    sender = mail_world.add_user("dashboard", "dash-pw")
    mail_world.send(sender, [mail_world.address("dashboard"), "peer@remote.example"], "for every panel",
                    login=(sender, "dash-pw"))
    ghost = mail_world.address("alias-of-nobody-for-the-dashboard")   # accepted at RCPT, then local-address-error
    mail_world.backends.rrt.add_alias(ghost, mail_world.address("nobody-for-the-dashboard"))
    mail_world.send("someone@sender.example", [ghost], "unknown")
    assert eventually(lambda: [m for m in mail_world.sink.handler.messages if m[1] == ["peer@remote.example"]])
    assert eventually(lambda: "mailetContainerLocalAddressError_total" in scrape(webadmin(mail_world)))
    dashboard = json.loads(DASHBOARD.read_text())
    queried: set[str] = set()
    patterns: list[str] = []
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            queried |= set(re.findall(r"\b([A-Za-z_][A-Za-z0-9_:]*)(?=\[|\)|\s*/|$)", target["expr"]))
            patterns += re.findall(r'__name__=~"([^"]+)"', target["expr"])
    functions = {"rate", "sum", "histogram_quantile", "by", "le", "type", "status"}

    def exposed() -> set[str]:
        from prometheus_client.parser import text_string_to_metric_families

        with urllib.request.urlopen(f"{webadmin(mail_world)}/metrics", timeout=30) as response:
            text = response.read().decode()
        # Declared families count too: a labelled counter has no sample before its first event.
        declared = set(re.findall(r"^# TYPE (\S+) ", text, re.MULTILINE))
        return {sample.name for family in text_string_to_metric_families(text) for sample in family.samples} | declared

    def missing() -> list[str]:
        names = exposed()
        unmatched = [p for p in patterns if not any(re.fullmatch(p, name) for name in names)]
        return sorted(m for m in queried - functions if m not in names) + unmatched

    # A mailet's timer appears once the mailet has finished its first mail: wait for the last ones.
    deadline = time.monotonic() + 60
    while (missing_now := missing()) and time.monotonic() < deadline:
        time.sleep(1)
    assert not missing_now, f"dashboard queries metrics nobody exposes: {missing_now}"


def test_error_mail_reprocessed_by_a_webadmin_task(mail_world: MailWorld, monkeypatch):
    from mailserver.mailets.headers import AddDeliveredToHeader

    base = webadmin(mail_world)
    user = mail_world.add_user("reprocessed")
    monkeypatch.setattr(AddDeliveredToHeader, "service", lambda self, mail: 1 / 0)
    mail_world.send("someone@sender.example", [user], "fragile", subject="task")
    assert eventually(lambda: [m for m in mail_world.repository("error") if [str(r) for r in m.recipients] == [user]])
    monkeypatch.undo()
    before = scrape(base)
    repositories = http_json("GET", f"{base}/mailRepositories")
    assert {"repository": "var/mail/error/", "path": "var%2Fmail%2Ferror%2F"} in repositories
    encoded = urllib.request.quote("var/mail/error/", safe="")
    task = http_json("PATCH", f"{base}/mailRepositories/{encoded}/mails?action=reprocess&processor=transport")
    report = http_json("GET", f"{base}/tasks/{task['taskId']}/await?timeout=60s")
    assert report["status"] == "completed" and report["type"] == "reprocessing-all", report
    assert eventually(lambda: len(mail_world.inbox(user)) == 1)
    after = scrape(base)
    completed = [k for k in after if k.startswith("tasks_total") and "status=completed" in k]
    assert completed and sum(after[k] for k in completed) > sum(before.get(k, 0) for k in completed)
