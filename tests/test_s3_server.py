"""The S3 server the suite keeps ``s3://`` tables on (tests/s3_server.py): S3Proxy answers
signed requests only, stores in its folder, stops by pid, and its jars come from the
set-up; and the one thing it does not do that delta-rs counts on (conditional PUTs),
which is why a table on it has one writer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from s3_server import S3, S3Server

import jvm


def test_signed_requests_are_answered_and_land_in_the_folder(s3_server: S3Server) -> None:
    key = f"/{s3_server.buckets[0]}/probe/{os.getpid()}.txt"
    assert s3_server.request("PUT", key, b"hello") == 200
    assert (s3_server.blobs / key.lstrip("/")).read_bytes() == b"hello"
    assert s3_server.request("GET", key) == 200
    assert s3_server.request("GET", f"/{s3_server.buckets[0]}/probe/absent.txt") == 404
    # a wrong secret is refused: the server checks signatures, as S3 does
    impostor = S3Server(s3_server.root, secret_key="not-the-secret")
    impostor.port = s3_server.port
    assert impostor.request("GET", key) == 403


def test_s3proxy_overwrites_despite_if_none_match(s3_server: S3Server) -> None:
    """delta-rs 1.x commits with ``If-None-Match: *`` and relies on a 412 for a version
    that exists; S3Proxy 2.6 answers 200 and replaces the object. Should a later S3Proxy
    refuse it, this fails, and a table on it could take concurrent writers."""
    key = f"/{s3_server.buckets[0]}/probe/commit-{os.getpid()}.json"
    assert s3_server.request("PUT", key, b"first") == 200
    assert s3_server.request("PUT", key, b"second", {"If-None-Match": "*"}) == 200
    assert (s3_server.blobs / key.lstrip("/")).read_bytes() == b"second"


@pytest.mark.slow  # a JVM of its own
def test_a_server_stops_by_pid_and_a_second_one_keeps_its_own_buckets(tmp_path: Path) -> None:
    with S3Server(tmp_path / "s3", buckets=("first", "second")) as server:
        assert server.request("GET", "/second") == 200
        assert server.request("GET", "/third") == 404
        assert sorted(p.name for p in server.blobs.iterdir()) == ["first", "second"]
        proc = server.proc
        assert proc is not None
    assert proc.returncode is not None  # exited and waited for: no JVM left behind


def test_missing_jars_fail_saying_how_to_get_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jvm, "LIB", tmp_path / "lib")
    with pytest.raises(AssertionError, match=rf"set {S3!r} are missing .*scripts/dev test"):
        S3Server(tmp_path / "s3").start()
