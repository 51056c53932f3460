"""The mail server itself (``mailserver serve``, every role and JMAP) over the stack's backends.

Its WebAdmin password is generated on first start and kept in ``.stack/mailserver/`` (mode
0600); Airflow's ``webadmin_default`` connection reads it from there. A self-signed certificate
made there too (``tls/``) lets clients STARTTLS, hence log in, and serves JMAP over HTTPS (JMAP
clients such as jmapc only speak HTTPS). The other way round, the mail
server triggers the maintenance DAGs with the Airflow admin's password, which the stack writes
into the auth manager's file before either starts (the mail server starts first).
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
from pathlib import Path

from .. import processes
from ..endpoints import Endpoints
from ..tls import CertificateFiles, ensure_self_signed
from .base import Service

# ``mailserver serve``'s default roles and the optional JMAP one (mailserver.settings.node), spelt
# out here: the stack commands run without the project's packages on the path.
ROLES = "smtp,spooler,outgoing,webadmin,tasks,listeners,imap,jmap"


class MailServer(Service):
    name = "mailserver"
    start_timeout = 120.0
    stop_timeout = 60.0   # SMTP stops first, then the consumers finish the mail they hold

    @property
    def password_file(self) -> Path:
        return self.home / "webadmin-password"

    def webadmin_password(self) -> str | None:
        return self.password_file.read_text().strip() if self.password_file.exists() else None

    @property
    def webadmin_url(self) -> str:
        return f"http://{self.settings.host}:{self.settings.ports.webadmin}"

    @property
    def jmap_url(self) -> str:
        """JMAP's session resource (RFC 8620 2.2), where a client starts."""
        return f"https://{self.settings.host}:{self.settings.ports.jmap}/.well-known/jmap"

    def prepare(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        if not self.password_file.exists():
            self.password_file.write_text(secrets.token_urlsafe(18) + "\n")
            self.password_file.chmod(0o600)
        self.certificate()

    def certificate(self) -> CertificateFiles:
        """The stack's self-signed certificate, so STARTTLS (and with it login) works out of the box."""
        return ensure_self_signed(self.home / "tls", self.settings.host)

    def tls_env(self) -> dict[str, str]:
        """Certificate settings, unless the operator gave a certificate of their own."""
        if os.environ.get("MAILSERVER_SMTP_TLS_CERT") or os.environ.get("MAILSERVER_IMAP_TLS_CERT"):
            return {}
        files = self.certificate()
        jmap = {} if os.environ.get("MAILSERVER_JMAP_TLS_CERT") else {
            "MAILSERVER_JMAP_TLS_CERT": str(files.cert), "MAILSERVER_JMAP_TLS_KEY": str(files.key)}
        return {"MAILSERVER_SMTP_TLS_CERT": str(files.cert), "MAILSERVER_SMTP_TLS_KEY": str(files.key), **jmap}

    def env(self) -> dict[str, str]:
        s = self.settings
        env = dict(os.environ)
        env.update(Endpoints.from_settings(s).to_env())
        env.update({
            "MAILSERVER_SMTP_HOST": s.host,
            "MAILSERVER_SMTP_PORT": str(s.ports.smtp),
            "MAILSERVER_WEBADMIN_HOST": s.host,
            "MAILSERVER_WEBADMIN_PORT": str(s.ports.webadmin),
            "MAILSERVER_IMAP_HOST": s.host,
            "MAILSERVER_IMAP_PORT": str(s.ports.imap),
            "MAILSERVER_ROLES": os.environ.get("MAILSERVER_ROLES", ROLES),
            "MAILSERVER_JMAP_HOST": s.host,
            "MAILSERVER_JMAP_PORT": str(s.ports.jmap),
            "MAILSERVER_WEBADMIN_PASSWORD": self.webadmin_password() or "",
            **self.tls_env(),
            **self.airflow_env(),
        })
        return env

    def airflow_env(self) -> dict[str, str]:
        """Where the maintenance procedures run: the stack's Airflow api-server and its admin account."""
        # Imported here: airflow.py imports this module.
        from .airflow import Airflow

        s = self.settings
        return {"MAILSERVER_AIRFLOW_URL": f"http://{s.host}:{s.ports.airflow}",
                "MAILSERVER_AIRFLOW_USERNAME": s.credentials.airflow_user,
                "MAILSERVER_AIRFLOW_PASSWORD": Airflow(s).ensure_admin_password()}

    def start(self) -> None:
        # The stack recognises its processes by their command line naming the stack's root: the
        # bytecode cache under .stack/ does that, and keeps the work tree free of __pycache__.
        argv = [sys.executable, "-X", f"pycache_prefix={self.home / 'pycache'}", "-m", "mailserver.cli", "serve"]
        processes.spawn(argv, pid_file=self.pid_file, log_file=self.log_file, env=self.env(), cwd=self.home)

    def probe(self) -> str:
        import httpx  # imported late: `status` works without a venv

        s = self.settings
        with socket.create_connection((s.host, s.ports.smtp), timeout=5) as conn:
            banner = conn.recv(512).decode("ascii", "replace").strip()
        if not banner.startswith("220"):
            raise RuntimeError(f"SMTP greeting {banner!r}")
        status = httpx.get(f"{self.webadmin_url}/healthcheck", timeout=10).raise_for_status().json()["status"]
        return f"smtp://{s.host}:{s.ports.smtp}, webadmin {self.webadmin_url} (health {status})"
