"""Topic -> Delta table throughput against the raw librdkafka consume rate, same run.

    .venv/bin/python benchmarks/spark_delta_export.py [--records 1000000] [--size 100]
                                                      [--partitions 3] [--spark]

A built-in broker subprocess (fsync never: producing is set-up, not measured) gets N
records of SIZE bytes on a topic. Then, against the same data:

* raw: a librdkafka consumer (confluent-kafka) assigned to every partition consumes
  everything and only counts the messages -- the ceiling for any Python reader;
* export: ``spark_bridge.export_topic`` copies the topic into a fresh Delta table
  (fetch, Arrow columns, Parquet, Delta commit with offsets), timed end to end;
* rerun: the same export again, which must find nothing new;
* spark (with ``--spark``): ``spark.read.format("headrace")`` -> ``toArrow()`` ->
  ``DeltaSink.append_records``, session start-up excluded.

Raw and export runs alternate ``--repeat`` times (fresh table each time); the best of\neach and the median of the per-run ratios are reported.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TOPIC = "bench-export"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def broker(partitions: int) -> Iterator[str]:
    port = _free_port()
    data = tempfile.mkdtemp(prefix="headrace-bench-")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headrace",
            "broker",
            "--data-dir",
            data,
            "--listen",
            f"127.0.0.1:{port}",
            "--fsync",
            "never",
            "--num-partitions",
            str(partitions),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("broker did not start") from None
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(20)
        shutil.rmtree(data, ignore_errors=True)


def produce(bootstrap: str, records: int, size: int, partitions: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, partitions, 1)]).values():
        f.result(15)
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "1",
            "linger.ms": 20,
            "batch.num.messages": 10_000,
            "compression.type": "none",
        }
    )
    value = b"x" * size
    for i in range(records):
        while True:
            try:
                p.produce(TOPIC, value=value, key=str(i % 1000).encode())
                break
            except BufferError:
                p.poll(0.05)
    if p.flush(120):
        raise RuntimeError("produce did not finish")


def raw_consume(bootstrap: str, records: int, partitions: int) -> float:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-raw",
            "enable.auto.commit": False,
            "queued.min.messages": 200_000,
        }
    )
    c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions)])
    started = time.perf_counter()
    seen = 0
    while seen < records:
        seen += sum(1 for m in c.consume(10_000, 1.0) if m.error() is None)
    elapsed = time.perf_counter() - started
    c.close()
    return records / elapsed


def export(bootstrap: str, path: str, records: int) -> float:
    from headrace.spark_bridge import export_topic

    result = export_topic(bootstrap, TOPIC, path)
    if result.records != records:
        raise RuntimeError(f"exported {result.records}, expected {records}")
    rerun = export_topic(bootstrap, TOPIC, path)
    if rerun.records != 0:
        raise RuntimeError(f"rerun wrote {rerun.records} rows")
    return records / result.seconds


def spark_path(bootstrap: str, path: str, records: int) -> float:
    from headrace.spark_bridge import DeltaSink, spark_session

    spark = spark_session("bench")
    spark.sparkContext.setLogLevel("ERROR")
    frame = (
        spark.read.format("headrace")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", TOPIC)
        .load()
    )
    frame.limit(1).collect()  # warm the Python workers
    started = time.perf_counter()
    written = DeltaSink(path).append_records(frame.toArrow())
    elapsed = time.perf_counter() - started
    if written != records:
        raise RuntimeError(f"spark path wrote {written}, expected {records}")
    return records / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--spark", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with broker(args.partitions) as bootstrap, tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        produce(bootstrap, args.records, args.size, args.partitions)
        print(
            f"produced {args.records:,} x {args.size} B in {time.perf_counter() - started:.1f}s",
            flush=True,
        )
        # Raw and export alternate, so both see the same load on a shared machine.
        raws, exports = [], []
        for i in range(args.repeat):
            raws.append(raw_consume(bootstrap, args.records, args.partitions))
            exports.append(export(bootstrap, f"{tmp}/export-{i}", args.records))
            print(
                f"  run {i + 1}: raw {raws[-1]:,.0f} rec/s, export {exports[-1]:,.0f} rec/s"
                f" ({exports[-1] / raws[-1]:.2f})",
                flush=True,
            )
        raw, best = max(raws), max(exports)
        ratios = sorted(e / r for e, r in zip(exports, raws, strict=True))
        print(f"raw librdkafka consume : {raw:>12,.0f} rec/s (best of {args.repeat})")
        print(
            f"export to Delta        : {best:>12,.0f} rec/s (best; {best / raw:.2f} of best raw,"
            f" median per-run ratio {ratios[len(ratios) // 2]:.2f}; every rerun wrote 0 rows)",
            flush=True,
        )
        if args.spark:
            spark = max(
                spark_path(bootstrap, f"{tmp}/spark-{i}", args.records) for i in range(args.repeat)
            )
            print(f"Spark read -> Delta    : {spark:>12,.0f} rec/s  ({spark / raw:.2f} of raw)")
            from pyspark.sql import SparkSession

            active = SparkSession.getActiveSession()
            if active is not None:
                active.stop()


if __name__ == "__main__":
    main()
