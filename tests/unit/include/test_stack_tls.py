"""The stack's mail server gets a self-signed certificate, so STARTTLS (and login) work out of the box."""

from __future__ import annotations

import socket
import ssl
import stat
import threading

from cryptography import x509

from include.stack.services.mailserver import MailServer
from include.stack.settings import StackSettings
from include.stack.tls import ensure_self_signed


def test_the_key_is_private_and_a_second_start_keeps_the_same_certificate(tmp_path):
    first = ensure_self_signed(tmp_path / "tls", "127.0.0.1")
    assert stat.S_IMODE(first.key.stat().st_mode) == 0o600
    cert_bytes, key_bytes = first.cert.read_bytes(), first.key.read_bytes()
    again = ensure_self_signed(tmp_path / "tls", "127.0.0.1")
    assert (again.cert.read_bytes(), again.key.read_bytes()) == (cert_bytes, key_bytes)


def test_a_client_trusting_the_certificate_verifies_the_loopback_address(tmp_path):
    files = ensure_self_signed(tmp_path, "127.0.0.1")
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(files.cert, files.key)
    client_ctx = ssl.create_default_context(cafile=str(files.cert))   # hostname checking on
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve() -> None:
            conn, _ = listener.accept()
            with server_ctx.wrap_socket(conn, server_side=True) as tls:
                tls.sendall(tls.recv(16))

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                client_ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(b"ping")
            assert tls.recv(16) == b"ping"
        thread.join(10)
    names = x509.load_pem_x509_certificate(files.cert.read_bytes()).extensions \
        .get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]


def test_the_mail_server_is_started_with_it_unless_the_operator_gave_one(tmp_path, monkeypatch):
    monkeypatch.delenv("MAILSERVER_SMTP_TLS_CERT", raising=False)
    monkeypatch.delenv("MAILSERVER_IMAP_TLS_CERT", raising=False)
    server = MailServer(StackSettings(root=tmp_path))
    server.prepare()
    env = server.env()
    assert env["MAILSERVER_SMTP_TLS_CERT"] == str(server.certificate().cert)
    assert env["MAILSERVER_SMTP_TLS_KEY"] == str(server.certificate().key)
    monkeypatch.setenv("MAILSERVER_SMTP_TLS_CERT", "/etc/ssl/mail.crt")
    monkeypatch.setenv("MAILSERVER_SMTP_TLS_KEY", "/etc/ssl/mail.key")
    env = server.env()
    assert (env["MAILSERVER_SMTP_TLS_CERT"], env["MAILSERVER_SMTP_TLS_KEY"]) == \
        ("/etc/ssl/mail.crt", "/etc/ssl/mail.key")
