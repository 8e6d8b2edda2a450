"""Registry processes over a broker process: ids survive restarts, two registries agree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from brokerproc import BrokerProcess, free_port
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from registryproc import wait_listening

pytestmark = pytest.mark.slow


def record(n: int) -> Schema:
    fields = [{"name": f"f{i}", "type": "int", "default": 0} for i in range(n)]
    return Schema(json.dumps({"type": "record", "name": "R", "fields": fields}), "AVRO")


def start_registry(bootstrap: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "headrace",
                "schema-registry",
                "--listen",
                f"127.0.0.1:{port}",
                "--bootstrap-servers",
                bootstrap,
            ],
            stdout=out,
            stderr=out,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    wait_listening(port, proc)
    return proc, f"http://127.0.0.1:{port}"


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0


def test_ids_survive_a_broker_restart_with_the_registry_inside(tmp_path: Path) -> None:
    port = free_port()
    broker = BrokerProcess(tmp_path / "data", "--schema-registry-listen", f"127.0.0.1:{port}")
    url = f"http://127.0.0.1:{port}"
    with broker:
        assert broker.proc is not None
        wait_listening(port, broker.proc)
        with SchemaRegistryClient({"url": url}) as client:
            ids = [client.register_schema("s", record(n)) for n in range(3)]
        assert ids == [1, 2, 3]
        broker.stop()
        broker.start()
        wait_listening(port, broker.proc)
        with SchemaRegistryClient({"url": url}) as again:  # a fresh client: nothing cached
            assert again.get_latest_version("s").schema_id == 3
            assert again.get_versions("s") == [1, 2, 3]
            assert again.get_schema(2).schema_str == record(1).schema_str
            assert again.register_schema("s", record(3)) == 4


def test_two_registry_processes_agree(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data") as broker:
        a, url_a = start_registry(broker.bootstrap, tmp_path / "a.log")
        try:
            b, url_b = start_registry(broker.bootstrap, tmp_path / "b.log")
            try:
                with (
                    SchemaRegistryClient({"url": url_a}) as ca,
                    SchemaRegistryClient({"url": url_b}) as cb,
                ):
                    check_agreement(ca, cb)
            finally:
                stop(b)
        finally:
            stop(a)


def check_agreement(ca: SchemaRegistryClient, cb: SchemaRegistryClient) -> None:
    # Writes alternate between the two: each takes the writer's role in turn
    # and sees what the other wrote, so ids never collide.
    got = []
    for n in range(4):
        client = ca if n % 2 == 0 else cb
        got.append(client.register_schema(f"s{n}", record(n)))
    assert got == [1, 2, 3, 4]
    for client in (ca, cb):
        assert client.get_subjects() == ["s0", "s1", "s2", "s3"]
        assert [client.get_schema(i).schema_str for i in got] == [
            record(n).schema_str for n in range(4)
        ]
    check_concurrent_writes(ca, cb)


def check_concurrent_writes(ca: SchemaRegistryClient, cb: SchemaRegistryClient) -> None:
    """Both registries take writes at once: each write fences the other's writer, which
    catches up and tries again, so every schema still gets its own id, agreed by both."""
    from concurrent.futures import ThreadPoolExecutor

    def register(n: int) -> int:
        client = ca if n % 2 == 0 else cb
        return client.register_schema(f"c{n}", record(10 + n))

    with ThreadPoolExecutor(4) as pool:
        ids = list(pool.map(register, range(12)))
    assert len(set(ids)) == 12 and min(ids) == 5  # after the four above, none reused
    for client in (ca, cb):
        assert [client.get_schema(i).schema_str for i in ids] == [
            record(10 + n).schema_str for n in range(12)
        ]
