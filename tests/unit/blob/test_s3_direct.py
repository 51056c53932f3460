"""DirectS3 against a scripted HTTP server: signed requests, S3 error codes, botocore's retry rules."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mailserver.blob.s3_direct import DirectS3, S3Error

NO_SUCH_KEY = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code>'
               b"<Message>The specified key does not exist.</Message></Error>")
NO_SUCH_BUCKET = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchBucket</Code>'
                  b"<Message>The specified bucket does not exist</Message></Error>")


class ScriptedS3(ThreadingHTTPServer):
    """Answers each request with the next (status, body) of ``replies``; records what it got."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.replies: list[tuple[int, bytes]] = []
        self.reply_headers: dict[str, str] = {}   # sent with every reply
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedS3
    protocol_version = "HTTP/1.1"   # keep-alive: the client's pool reuses connections, as with S3

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.requests.append((self.command, self.path, dict(self.headers.items()), body))
        status, payload = self.server.replies.pop(0) if self.server.replies else (200, b"")
        self.send_response(status)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in self.server.reply_headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def do_HEAD(self) -> None:
        self.server.requests.append((self.command, self.path, dict(self.headers.items()), b""))
        status, payload = self.server.replies.pop(0) if self.server.replies else (200, b"")
        self.send_response(status)
        self.send_header("Content-Length", str(len(payload)))   # a HEAD announces a length, sends no body
        self.end_headers()

    do_PUT = do_DELETE = do_GET = _answer

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ScriptedS3]:
    scripted = ScriptedS3()
    thread = threading.Thread(target=scripted.serve_forever, daemon=True)
    thread.start()
    yield scripted
    scripted.shutdown()
    scripted.server_close()


def client(server: ScriptedS3, attempts: int = 3) -> DirectS3:
    host, port = server.server_address[:2]
    return DirectS3(f"http://{host}:{port}", "access", "secret", "us-east-1", pool_size=2,
                    connect_timeout=2, read_timeout=5, max_attempts=attempts)


def test_a_get_returns_the_stored_bytes_even_when_s3_names_a_content_encoding(server):
    # An object written by another client with Content-Encoding: gzip is stored compressed and served so;
    # a blob's bytes are what was stored (as boto3 gives them), never decoded on the way.
    stored = gzip.compress(b"Subject: hi\r\n\r\nbody\r\n")
    server.reply_headers = {"Content-Encoding": "gzip"}
    server.replies.append((200, stored))
    body = client(server).get_object("bucket", "blob")
    try:
        assert body.read() == stored
    finally:
        body.close()


def test_a_put_is_path_style_signed_and_carries_the_content(server):
    client(server).put_object("bucket", "blob/1 x", b"hello")

    [(method, path, headers, body)] = server.requests
    assert (method, path, body) == ("PUT", "/bucket/blob%2F1%20x", b"hello")
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=access/")
    assert "/us-east-1/s3/aws4_request" in headers["Authorization"]
    assert headers["X-Amz-Content-SHA256"] == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"


def test_an_s3_error_carries_its_code(server):
    server.replies = [(404, NO_SUCH_BUCKET)]
    with pytest.raises(S3Error) as raised:
        client(server).delete_object("missing", "k")
    assert (raised.value.status, raised.value.code) == (404, "NoSuchBucket")
    assert len(server.requests) == 1   # a client error is not tried again


def test_a_server_error_is_tried_again_up_to_max_attempts(server):
    server.replies = [(503, b"<Error><Code>SlowDown</Code></Error>"), (500, b""), (200, b"")]
    client(server, attempts=3).put_object("bucket", "k", b"x")
    assert len(server.requests) == 3

    server.requests.clear()
    server.replies = [(503, b"<Error><Code>SlowDown</Code></Error>")] * 2
    with pytest.raises(S3Error, match="SlowDown"):
        client(server, attempts=2).put_object("bucket", "k", b"x")
    assert len(server.requests) == 2


def test_a_get_streams_the_object_and_gives_the_connection_back(server):
    s3 = client(server)
    server.replies = [(200, b"x" * 100_000), (200, b"second")]
    body = s3.get_object("bucket", "blob/1")
    assert body.read(10) == b"x" * 10
    assert body.read() == b"x" * 99_990
    body.close()
    second = s3.get_object("bucket", "blob/2")
    assert second.read() == b"second"
    second.close()
    assert [(m, p) for m, p, _, _ in server.requests] == [("GET", "/bucket/blob%2F1"), ("GET", "/bucket/blob%2F2")]
    assert server.requests[0][2]["Authorization"].startswith("AWS4-HMAC-SHA256 ")


def test_a_get_closed_part_way_leaves_the_next_request_whole(server):
    s3 = client(server)
    server.replies = [(200, b"a" * 200_000), (200, b"next")]
    body = s3.get_object("bucket", "big")
    assert body.read(5) == b"aaaaa"
    body.close()   # the rest is never read: that connection must not carry the next answer
    again = s3.get_object("bucket", "small")
    assert again.read() == b"next"
    again.close()


def test_a_missing_object_is_an_s3_error_with_its_code(server):
    server.replies = [(404, NO_SUCH_KEY), (200, b"after")]
    s3 = client(server)
    with pytest.raises(S3Error) as raised:
        s3.get_object("bucket", "gone")
    assert (raised.value.status, raised.value.code) == (404, "NoSuchKey")
    assert s3.get_object("bucket", "there").read() == b"after"   # the error's body was read off the connection


def test_a_head_answers_existence_by_status(server):
    s3 = client(server)
    server.replies = [(200, b"12345"), (404, b"")]
    s3.head_object("bucket", "there")
    with pytest.raises(S3Error) as raised:
        s3.head_object("bucket", "gone")
    assert (raised.value.status, raised.value.code) == (404, "404")   # no body: the status is the code
    assert [m for m, *_ in server.requests] == ["HEAD", "HEAD"]
