"""Restart after SIGKILL: time from process start to the first acknowledged produce.

    .venv/bin/python benchmarks/broker_restart.py [--partitions 1000] [--gigabytes 10]
        [--data-dir DIR] [--keep]

Fills a topic of PARTITIONS partitions with GIGABYTES of records (librdkafka, acks=all,
fsync on, 10 KB values spread evenly), kills the broker with SIGKILL (no shutdown code
runs, as in a crash), starts it again on the same data directory and times: until its
port accepts connections, and until a librdkafka producer's acks=all produce to the
topic is acknowledged. Then kills it once more and restarts it, so that both a kill
right after the fill and a kill of a freshly restarted broker are measured. The data
directory is removed at the end unless --keep.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from broker_throughput import free_port, wait_listening

TOPIC = "restart"
VALUE_BYTES = 10_000


PYTHON = [sys.executable]  # the broker's interpreter (--broker-python)


def start_broker(data: Path, port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            PYTHON[0],
            "-m",
            "headrace",
            "broker",
            "--data-dir",
            str(data),
            "--listen",
            f"127.0.0.1:{port}",
            "--fsync",
            "always",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def bulk_producer(bootstrap: str) -> Any:
    """A librdkafka producer for filling a log quickly: acks=all, 1 MB batches."""
    from confluent_kafka import Producer

    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.kbytes": 1_000_000,
            "compression.type": "none",
        }
    )


def fill(bootstrap: str, partitions: int, total_bytes: int) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, partitions, 1)]).values():
        future.result(120)
    producer = bulk_producer(bootstrap)
    records = total_bytes // VALUE_BYTES
    value = b"v" * VALUE_BYTES
    per_call = max(1, min(100, records // partitions))
    messages = [{"value": value} for _ in range(per_call)]
    sent = 0
    started = time.perf_counter()
    while sent < records:
        part = messages[: min(per_call, records - sent)]
        partition = (sent // per_call) % partitions
        while True:
            try:
                sent += producer.produce_batch(TOPIC, part, partition=partition)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    if producer.flush(600):
        raise RuntimeError("fill did not complete")
    took = time.perf_counter() - started
    print(
        f"filled {records:,} records ({records * VALUE_BYTES / 1e9:.2f} GB) in {took:.0f} s",
        flush=True,
    )


def cpu_seconds(pid: int) -> float:
    """User and system CPU time the process has used (Linux /proc): on a busy machine
    a figure the other work does not stretch, unlike the wall clock."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_produce(bootstrap: str, port: int, data: Path) -> tuple[float, float, float]:
    """Start the broker and return (seconds until listening, seconds until a produce
    is acknowledged), both from the moment the process is started, and the CPU
    seconds the broker used until then."""
    from confluent_kafka import KafkaError, Producer

    started = time.monotonic()
    proc = start_broker(data, port)
    wait_listening(port, proc, timeout=600)
    listening = time.monotonic() - started
    outcome: list[KafkaError | None] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 0,
            "reconnect.backoff.ms": 10,
            "reconnect.backoff.max.ms": 50,
            "message.timeout.ms": 120_000,
        }
    )
    producer.produce(
        TOPIC, b"after restart", partition=0, on_delivery=lambda e, _m: outcome.append(e)
    )
    producer.flush(120)
    acknowledged = time.monotonic() - started
    cpu = cpu_seconds(proc.pid)
    if outcome != [None]:
        raise RuntimeError(f"produce after restart failed: {outcome}")
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    return listening, acknowledged, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--gigabytes", type=float, default=10.0)
    parser.add_argument("--data-dir", type=Path, default=None, help="parent of the data dir")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument(
        "--broker-python",
        metavar="PYTHON",
        default=sys.executable,
        help="run the broker of another checkout (its .venv/bin/python), for a before/after",
    )
    args = parser.parse_args()
    PYTHON[0] = args.broker_python
    parent = Path(tempfile.mkdtemp(prefix="restart-bench-", dir=args.data_dir))
    data = parent / "data"
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    print(
        f"{args.partitions} partitions, {args.gigabytes} GB, fsync on, broker of"
        f" {args.broker_python}; load average"
        f" {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
        flush=True,
    )
    try:
        proc = start_broker(data, port)
        wait_listening(port, proc)
        fill(bootstrap, args.partitions, int(args.gigabytes * 1e9))
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        for restart in range(args.restarts):
            listening, acknowledged, cpu = first_produce(bootstrap, port, data)
            print(
                f"restart {restart + 1} after SIGKILL: listening after {listening:.2f} s,"
                f" first acks=all produce acknowledged after {acknowledged:.2f} s,"
                f" broker CPU {cpu:.2f} s (load average {os.getloadavg()[0]:.1f})",
                flush=True,
            )
    finally:
        if not args.keep:
            shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    main()
