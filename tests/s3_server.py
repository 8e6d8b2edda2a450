"""S3Proxy on loopback, from the jars of jvm/s3/: a real S3 API server over a temporary
folder, for tests that keep Delta tables at an ``s3://`` URL.

Starting one, in order:

1. a free port and a root folder holding ``blobs/`` (jclouds' ``filesystem`` store: a
   bucket is a folder of it), ``s3proxy.properties`` (the endpoint, one access key and
   secret, AWS signatures v2 and v4) and ``logback.xml`` (warnings only: without it
   S3Proxy logs every request at debug level);
2. S3Proxy's ``Main`` runs in a JVM of its own, its output to ``server.log``;
3. it is ready when a signed ListBuckets answers 200, which also proves the key works;
4. the buckets are created through the API (CreateBucket), as a user would.

It is stopped by pid: SIGTERM, then SIGKILL after a grace period. A failure quotes the
end of its log. The ``s3_server`` fixture shares one server per test session; tests
keep apart by table name (:meth:`S3Server.table_url`).

delta-rs is given :meth:`S3Server.storage_options`, or the same names as environment
variables (:meth:`S3Server.env`), which it reads when no option is passed: how the
``headrace`` commands, which take no storage options, reach the server.

No locking option is among them, and none is needed to write: delta-rs 1.x no longer
asks for ``AWS_S3_ALLOW_UNSAFE_RENAME`` or a DynamoDB lock on S3. It writes each commit
file with a conditional PUT (``If-None-Match: *``) and counts on the store to refuse one
for a version that exists; with ``AWS_S3_ALLOW_UNSAFE_RENAME=true`` it sends the very
same requests (both seen through a recording proxy with deltalake 1.6). S3Proxy 2.6
ignores that header and overwrites (pinned by tests/test_s3_server.py), so on this
server, as on any S3 store without conditional writes, nothing arbitrates between two
processes committing the same table version at the same moment: one writer per table.
A writer that finds the version already listed still moves on to the next one.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import hmac
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from uuid import uuid4

import pytest
from brokerproc import free_port
from processes import StartStop, log_tail, terminate

from jvm import classpath, java_command

S3 = "s3"
"""The jar set of S3Proxy 2.6.0 (jvm/s3/pom.xml)."""

MAIN = "org.gaul.s3proxy.Main"
REGION = "us-east-1"
"""S3Proxy accepts any region in a v4 signature; delta-rs needs one to sign with."""

_LOGBACK = """<configuration>
  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{36} - %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="STDERR"/></root>
</configuration>
"""


class S3Server(StartStop):
    """One S3Proxy process; ``start()`` or ``with S3Server(root) as s3:``."""

    def __init__(
        self,
        root: Path,
        buckets: Sequence[str] = ("lake",),
        access_key: str = "headrace",
        secret_key: str = "headrace-secret-key",
    ) -> None:
        self.root = root
        self.buckets = tuple(buckets)
        self.access_key = access_key
        self.secret_key = secret_key
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def blobs(self) -> Path:
        """The folder S3Proxy stores objects in: ``blobs/<bucket>/<key>``."""
        return self.root / "blobs"

    @property
    def log_path(self) -> Path:
        return self.root / "server.log"

    # ------------------------------------------------------------------ what clients get
    def storage_options(self) -> dict[str, str]:
        """delta-rs's ``storage_options`` for tables on this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": REGION,
            # plain HTTP on loopback: delta-rs refuses an http:// endpoint without it
            "AWS_ALLOW_HTTP": "true",
        }

    def env(self) -> dict[str, str]:
        """The same settings as environment variables, for a command or a child process."""
        return self.storage_options()

    def table_url(self, name: str | None = None, bucket: str | None = None) -> str:
        """``s3://<bucket>/<name>``; a fresh name when none is given."""
        return f"s3://{bucket or self.buckets[0]}/{name or 'table-' + uuid4().hex[:12]}"

    # ------------------------------------------------------------------ lifecycle
    def start(self, timeout: float = 60.0) -> S3Server:
        assert self.proc is None or self.proc.poll() is not None, "S3Proxy already running"
        self.blobs.mkdir(parents=True, exist_ok=True)
        properties = self.root / "s3proxy.properties"
        properties.write_text(
            f"s3proxy.endpoint={self.endpoint}\n"
            "s3proxy.authorization=aws-v2-or-v4\n"
            f"s3proxy.identity={self.access_key}\n"
            f"s3proxy.credential={self.secret_key}\n"
            "jclouds.provider=filesystem\n"
            f"jclouds.filesystem.basedir={self.blobs}\n"
        )
        logback = self.root / "logback.xml"
        logback.write_text(_LOGBACK)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                java_command(
                    MAIN,
                    "--properties",
                    str(properties),
                    cp=classpath(S3),
                    jvm_options=(f"-Dlogback.configurationFile={logback}",),
                ),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.root,
            )
        try:
            self._wait_ready(timeout)
            for bucket in self.buckets:
                self.create_bucket(bucket)
        except BaseException:
            self.stop(grace=0)
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"S3Proxy exited with {self.proc.returncode}:\n{self.log()}")
            try:
                status = self.request("GET", "/")
            except OSError:
                status = None
            if status == 200:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"S3Proxy did not answer ListBuckets within {timeout}s"
                    f" (last status {status}):\n{self.log()}"
                )
            time.sleep(0.2)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds."""
        if self.proc is not None:
            terminate([self.proc], grace)

    def log(self, chars: int = 3000) -> str:
        return log_tail(self.log_path, chars)

    # ------------------------------------------------------------------ the S3 API
    def create_bucket(self, bucket: str) -> None:
        status = self.request("PUT", f"/{bucket}")
        assert status == 200, f"CreateBucket {bucket} answered {status}:\n{self.log()}"

    def request(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        headers: Mapping[str, str] | None = None,
    ) -> int:
        """One request signed with AWS signature v2 (path style); returns its status.

        v2 because it is a few lines (an HMAC-SHA1 of the verb, the date and the path):
        enough for setting up buckets and probing the server, while delta-rs itself
        signs with v4.
        """
        date = email.utils.formatdate(usegmt=True)
        sends_body = method in ("PUT", "POST")
        # signed, so named here: urllib would add a form type of its own to a body
        content_type = "application/octet-stream" if sends_body else ""
        to_sign = f"{method}\n\n{content_type}\n{date}\n{path}".encode()
        digest = hmac.new(self.secret_key.encode(), to_sign, hashlib.sha1).digest()
        request = urllib.request.Request(
            self.endpoint + path,
            data=body if sends_body else None,
            method=method,
            headers={
                **(headers or {}),
                **({"Content-Type": content_type} if content_type else {}),
                "Date": date,
                "Authorization": f"AWS {self.access_key}:{base64.b64encode(digest).decode()}",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                answer.read()
                return int(answer.status)
        except urllib.error.HTTPError as exc:
            exc.read()
            return int(exc.code)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """One S3Proxy for the session, with the bucket ``lake``; tests share it, each
    with tables of its own names (:meth:`S3Server.table_url`)."""
    with S3Server(tmp_path_factory.mktemp("s3")) as server:
        yield server
