"""`make run`'s mail server runs every role and JMAP, on its own loopback port over HTTPS."""

from __future__ import annotations

from include.stack.services.mailserver import MailServer
from include.stack.settings import StackSettings
from mailserver.jmap.config import JmapConfig
from mailserver.runtime.settings import ServeSettings
from mailserver.settings.node import OPTIONAL_ROLES, ROLES


def test_every_role_and_jmap_are_served_on_their_own_port_with_the_stack_certificate(tmp_path, monkeypatch):
    for name in ("MAILSERVER_ROLES", "MAILSERVER_SMTP_TLS_CERT", "MAILSERVER_IMAP_TLS_CERT",
                 "MAILSERVER_JMAP_TLS_CERT"):
        monkeypatch.delenv(name, raising=False)
    server = MailServer(StackSettings(root=tmp_path))
    server.prepare()
    env = server.env()

    assert ServeSettings.from_env(env).roles == (*ROLES, *OPTIONAL_ROLES)
    jmap = JmapConfig.from_env(env)
    ports = server.settings.ports
    assert (jmap.host, jmap.port) == (server.settings.host, ports.jmap)
    assert jmap.port not in (ports.smtp, ports.imap, ports.webadmin, ports.airflow)
    assert (jmap.tls_cert, jmap.tls_key) == (str(server.certificate().cert), str(server.certificate().key))
    assert server.jmap_url == f"https://{server.settings.host}:{ports.jmap}/.well-known/jmap"


def test_the_operators_roles_and_jmap_certificate_win(tmp_path, monkeypatch):
    monkeypatch.setenv("MAILSERVER_ROLES", "smtp,spooler")
    monkeypatch.setenv("MAILSERVER_JMAP_TLS_CERT", "/etc/ssl/jmap.crt")
    monkeypatch.delenv("MAILSERVER_SMTP_TLS_CERT", raising=False)
    monkeypatch.delenv("MAILSERVER_IMAP_TLS_CERT", raising=False)
    server = MailServer(StackSettings(root=tmp_path))
    server.prepare()
    env = server.env()

    assert env["MAILSERVER_ROLES"] == "smtp,spooler"
    assert env["MAILSERVER_JMAP_TLS_CERT"] == "/etc/ssl/jmap.crt"
    assert "MAILSERVER_JMAP_TLS_KEY" not in env
