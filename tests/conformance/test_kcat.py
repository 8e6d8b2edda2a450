"""Debian's kcat (librdkafka 2.0.2, which rejects tagged fields sent at their defaults)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, unique

pytestmark = pytest.mark.conformance


def kcat(*args: str, stdin: str | None = None, timeout: float = 60) -> str:
    binary = shutil.which("kcat")
    assert binary, "kcat is required (Debian package kcat; scripts/dev test installs it)"
    done = subprocess.run(
        [binary, *args], input=stdin, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_metadata_listing(broker_process: BrokerProcess) -> None:
    topic = unique("kcat-md")
    Confluent().create_topic(broker_process.bootstrap, topic, 3)
    out = kcat("-b", broker_process.bootstrap, "-L", "-t", topic)
    assert f'topic "{topic}" with 3 partitions' in out
    assert "broker 1 at 127.0.0.1" in out


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume(broker_process: BrokerProcess, codec: str) -> None:
    bs = broker_process.bootstrap
    topic = unique("kcat")
    Confluent().create_topic(bs, topic, 3)
    lines = [f"k{i % 100}:v{i}" for i in range(1000)]
    kcat(
        "-b",
        bs,
        "-t",
        topic,
        "-P",
        "-K:",
        "-z",
        codec,
        "-X",
        "acks=all",
        stdin="\n".join(lines) + "\n",
    )
    out = kcat("-b", bs, "-t", topic, "-C", "-o", "beginning", "-e", "-q", "-f", "%k:%s:%p:%o\n")
    rows = [line.split(":") for line in out.splitlines()]
    assert sorted(f"{k}:{v}" for k, v, _p, _o in rows) == sorted(lines)
    partitions_of_key: dict[str, set[str]] = {}
    for k, _v, p, _o in rows:
        partitions_of_key.setdefault(k, set()).add(p)
    assert all(len(ps) == 1 for ps in partitions_of_key.values())
    assert {p for _k, _v, p, _o in rows} == {"0", "1", "2"}
