"""The broker's metrics move when their cause happens: a produce adds bytes in, a fetch
bytes out, a lagging group shows its lag, an open transaction its age, a refused
request its error code; every family parses with prometheus_client's parser."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]


def _samples(exposition: bytes) -> Samples:
    found: Samples = {}
    for family in text_string_to_metric_families(exposition.decode()):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def _one(samples: Samples, name: str, **labels: str) -> float:
    return samples.get(name, {}).get(tuple(sorted(labels.items())), 0.0)


async def test_metrics_follow_what_clients_do(broker: Any) -> None:
    bootstrap = broker.bootstrap_servers
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic("metered", 2, 1)])
    await admin.close()
    before = _samples(broker.metrics.exposition())

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    await producer.start()
    for i in range(10):
        await producer.send_and_wait("metered", b"x" * 100, key=str(i).encode(), partition=i % 2)
    await producer.stop()
    consumer = AIOKafkaConsumer(
        "metered",
        bootstrap_servers=bootstrap,
        group_id="readers",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    read = 0
    while read < 10:
        read += sum(len(r) for r in (await consumer.getmany(timeout_ms=1000)).values())
    await consumer.commit({TopicPartition("metered", 0): 2, TopicPartition("metered", 1): 5})
    await consumer.stop()
    txn = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="metered-txn")
    await txn.start()
    await txn.begin_transaction()
    await txn.send_and_wait("metered", b"pending", partition=0)
    await asyncio.sleep(0.2)

    after = _samples(broker.metrics.exposition())
    assert _one(after, "headrace_broker_bytes_in_total", topic="metered") >= 10 * 100
    assert _one(after, "headrace_broker_batches_in_total", topic="metered") >= 10
    assert _one(after, "headrace_broker_bytes_out_total", topic="metered") >= 10 * 100
    assert any(
        dict(k)["api"] == "produce" and v >= 10
        for k, v in after["headrace_broker_requests_total"].items()
    )
    produce_latency = sum(
        v
        for k, v in after["headrace_broker_request_latency_seconds_count"].items()
        if dict(k)["api"] == "produce"
    )
    assert produce_latency >= 10
    assert (
        _one(after, "headrace_broker_log_end_offset", topic="metered", partition="0") == 6
    )  # 5 + pending
    assert _one(after, "headrace_broker_log_size_bytes", topic="metered", partition="1") > 500
    assert (
        _one(after, "headrace_broker_group_lag", group="readers", topic="metered", partition="0")
        == 4
    )
    assert (
        _one(after, "headrace_broker_group_lag", group="readers", topic="metered", partition="1")
        == 0
    )
    assert _one(after, "headrace_broker_group_state", group="readers", state="Empty") == 1
    assert _one(after, "headrace_broker_transactions_open") == 1
    assert _one(after, "headrace_broker_transaction_oldest_age_seconds") > 0
    assert _one(after, "headrace_broker_connections") >= 1
    assert _one(after, "headrace_broker_connections_opened_total") > _one(
        before, "headrace_broker_connections_opened_total"
    )
    assert _one(after, "headrace_broker_fsyncs_total") > _one(
        before, "headrace_broker_fsyncs_total"
    )
    # The process's memory by who holds it (a glibc system: the C heap's figures are there).
    assert _one(after, "headrace_broker_python_allocated_blocks") > 10_000
    assert (
        0
        < _one(after, "headrace_broker_malloc_in_use_bytes")
        <= _one(after, "headrace_broker_malloc_heap_bytes")
    )
    await txn.abort_transaction()
    await txn.stop()

    # A refused request shows its error code: a topic that does not exist, not auto-created.
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.delete_topics(["no-such-topic"])
    await admin.close()
    errors = _samples(broker.metrics.exposition())["headrace_broker_response_errors_total"]
    assert any(
        dict(k) == {"api": "delete_topics", "error": "UNKNOWN_TOPIC_OR_PARTITION"} for k in errors
    ), errors


def test_metrics_listen_serves_them(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headrace",
            "broker",
            "--data-dir",
            str(tmp_path / "data"),
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 30
        url = None
        while url is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if "metrics on " in line:
                url = line.split("metrics on ", 1)[1].strip()
        assert url is not None
        with urllib.request.urlopen(url, timeout=10) as response:
            samples = _samples(response.read())
        assert (
            _one(
                samples, "headrace_broker_log_end_offset", topic="__consumer_offsets", partition="0"
            )
            == 0
        )
        _half_sent_requests_cost_no_threads(proc.pid, url)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)  # drains and closes the pipe
    assert proc.returncode == 0


def _half_sent_requests_cost_no_threads(pid: int, url: str) -> None:
    """Finding: 300 half-sent requests held 311 threads for 45 s and more. Now they cost
    no thread, a connection is cut once its head is 5 s late, and scrapes are served
    meanwhile."""
    threads_before = len(psutil.Process(pid).threads())
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    stalled = []
    for _ in range(100):
        sock = socket.create_connection((host, int(port)), timeout=10)
        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and never the end
        stalled.append(sock)
    try:
        assert len(psutil.Process(pid).threads()) <= threads_before + 2
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.status == 200
        deadline = time.monotonic() + 30
        for sock in stalled:  # each is closed by the server, within its 5 s
            sock.settimeout(max(deadline - time.monotonic(), 0.1))
            assert sock.recv(1) == b""
    finally:
        for sock in stalled:
            sock.close()
