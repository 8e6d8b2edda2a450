"""Consuming through a share group (KIP-932) against a classic consumer group, one run.

    .venv/bin/python benchmarks/share_consume.py [--records 100000] [--size 100] [--rounds 2]

One built-in broker (fsync on, ``share.auto.offset.reset=earliest``); N records of
``--size`` bytes go to a fresh 1-partition topic once; then, in each round, on new groups:
a librdkafka classic consumer reads them all, one ShareConsumer (implicit
acknowledgement: each poll accepts the one before) reads them all, and four
ShareConsumers in threads share the partition until every record is in. The figure that
matters is the ratio share/classic: what per-record acquisition, acknowledgement and
the persisted share-partition state cost against plain offset-based reading.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from statistics import median

from broker_throughput import free_port, wait_listening
from confluent_kafka import Consumer, Producer, ShareConsumer

TOPIC = "share-bench"


def produce(bootstrap: str, records: int, size: int) -> None:
    """Fill partition 0 of the topic (created with one partition on first use)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    value = b"x" * size
    for i in range(records):
        while True:
            try:
                producer.produce(TOPIC, value=value, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("produce failed")


def classic(bootstrap: str, group: str, records: int) -> float:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([TOPIC])
    seen, started = 0, 0.0
    while seen < records:
        batch = consumer.consume(500, 1.0)
        if batch and not started:
            started = time.perf_counter()
        seen += len(batch)
    elapsed = time.perf_counter() - started
    consumer.close()
    return records / elapsed


def shared(bootstrap: str, group: str, records: int, members: int) -> float:
    lock = threading.Lock()
    seen: set[int] = set()
    starts: list[float] = []

    def member() -> None:
        consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
        consumer.subscribe([TOPIC])
        try:
            while True:
                batch = consumer.poll(1.0)
                with lock:
                    if batch and not starts:
                        starts.append(time.perf_counter())
                    seen.update(m.offset() or 0 for m in batch)
                    if len(seen) >= records:
                        break
            consumer.commit_sync(30)
        finally:
            consumer.close()

    threads = [threading.Thread(target=member) for _ in range(members)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return records / (time.perf_counter() - starts[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="headrace-share-bench-"))
    port = free_port()
    config = work / "server.properties"
    config.write_text(f"listeners=PLAINTEXT://127.0.0.1:{port}\nshare.auto.offset.reset=earliest\n")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headrace",
            "broker",
            "--data-dir",
            str(work / "data"),
            "--config",
            str(config),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, proc)
        bootstrap = f"127.0.0.1:{port}"
        produce(bootstrap, args.records, args.size)
        ratios: list[tuple[float, float]] = []
        for round_ in range(1, args.rounds + 1):
            plain = classic(bootstrap, f"classic-{round_}", args.records)
            one = shared(bootstrap, f"one-{round_}", args.records, 1)
            four = shared(bootstrap, f"four-{round_}", args.records, 4)
            ratios.append((one / plain, four / plain))
            print(
                f"round {round_}: classic {plain / 1000:.0f} k rec/s, one share consumer"
                f" {one / 1000:.0f} k rec/s, four share consumers {four / 1000:.0f} k rec/s"
            )
        print(
            f"median ratio share/classic: one {median(r[0] for r in ratios):.2f},"
            f" four {median(r[1] for r in ratios):.2f}"
        )
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
