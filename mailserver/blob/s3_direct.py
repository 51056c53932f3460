"""The S3 requests of the mail flow (PUT, GET, HEAD, DELETE of one object), sent without boto3's client machinery.

Why: each delivered mail costs three small PUTs and one DELETE (two blobs at intake, the stored
header, the spool entry's header once delivered), and a process that did not write the mail
itself (roles in processes of their own) reads it back with a HEAD and a GET per blob. Through a
boto3 client each request spent 0.6-0.8 ms of CPU in botocore (parameter handling, endpoint
rules, user agent, event hooks, response parsing) where the same request, signed by botocore's
own SigV4 signer and sent with urllib3, spends 0.3-0.4 ms (issue 16, ``docs/benchmarks.md``).
Everything else (multipart uploads, listings, buckets) stays on the boto3 client.

Only for an explicit endpoint with path-style addressing (S3Proxy, MinIO, Ceph, ... as the
local stack's): AWS itself, with its virtual-host and regional endpoint rules, keeps boto3.

Failures as botocore reports them: a connection failure or a 500/502/503/504 is tried again
(``max_attempts`` in all, exponential backoff, as botocore's standard retry mode); an S3 error
becomes ``S3Error`` with the error code of its XML body.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import urllib3
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from mailserver.settings import AwsSettings

_RETRIED_STATUS = frozenset({500, 502, 503, 504})
_CODE = re.compile(rb"<Code>([^<]+)</Code>")


class S3Error(Exception):
    """S3 answered a request with an error status."""

    def __init__(self, method: str, path: str, status: int, code: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status} {code}")
        self.status, self.code = status, code


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, S3Error):
        return exc.status in _RETRIED_STATUS
    return isinstance(exc, urllib3.exceptions.HTTPError)


class DirectS3:
    def __init__(self, endpoint_url: str, access_key: str, secret_key: str, region: str, *,
                 pool_size: int, connect_timeout: float, read_timeout: float, max_attempts: int) -> None:
        self._base = endpoint_url.rstrip("/")
        self._signer = S3SigV4Auth(Credentials(access_key, secret_key), "s3", region)
        # AWS_CA_BUNDLE: the private CA botocore would trust for an https endpoint, trusted here too.
        self._http = urllib3.PoolManager(num_pools=4, maxsize=pool_size, block=False, retries=False,
                                         timeout=urllib3.Timeout(connect=connect_timeout, read=read_timeout),
                                         ca_certs=AwsSettings.from_env().ca_bundle)
        self._send = retry(retry=retry_if_exception(_transient), stop=stop_after_attempt(max(1, max_attempts)),
                           wait=wait_exponential(multiplier=0.05, max=2), reraise=True)(self._send_once)

    def put_object(self, bucket: str, key: str, body: bytes) -> None:
        self._send("PUT", bucket, key, body)

    def delete_object(self, bucket: str, key: str) -> None:
        self._send("DELETE", bucket, key, None)

    def head_object(self, bucket: str, key: str) -> None:
        """Raises S3Error (status 404, code ``404``: a HEAD answer has no body) when there is no such object."""
        self._send("HEAD", bucket, key, None)

    def get_object(self, bucket: str, key: str) -> ObjectBody:
        """The object's content as a stream: read it, then close it (which gives the connection back)."""
        response = self._send("GET", bucket, key, None, stream=True)
        assert isinstance(response, urllib3.HTTPResponse)   # what a PoolManager returns (typed as its base class)
        return ObjectBody(response)

    def _send_once(self, method: str, bucket: str, key: str, body: bytes | None, *,
                   stream: bool = False) -> urllib3.BaseHTTPResponse:
        path = f"/{bucket}/{quote(key, safe='')}"
        url = self._base + path
        headers = {"Content-Length": str(len(body))} if body is not None else {}
        request = AWSRequest(method=method, url=url, data=body if body is not None else b"", headers=headers)
        self._signer.add_auth(request)   # SigV4, with the payload's SHA-256 as botocore sends it over HTTP
        # decode_content=False: a blob's bytes are what was stored, even under a Content-Encoding (as boto3 reads it).
        response = self._http.request(method, url, body=body, headers=dict(request.headers.items()),
                                      preload_content=not stream, decode_content=False)
        if response.status >= 300:
            found = _CODE.search(response.data or b"")   # reads (and so frees) a streamed error body too
            response.release_conn()
            raise S3Error(method, path, response.status, found.group(1).decode() if found else str(response.status))
        return response


class ObjectBody:
    """A GET's response body, read as it arrives."""

    def __init__(self, response: urllib3.HTTPResponse) -> None:
        self._response = response

    def read(self, size: int = -1) -> bytes:
        return self._response.read() if size < 0 else self._response.read(size)

    def close(self) -> None:
        # Read to the end, the connection is reused. Left part-way, it is closed: reading the rest
        # of a large blob nobody wants would cost more than a new connection.
        if not self._response.isclosed():
            self._response.close()
        self._response.release_conn()
