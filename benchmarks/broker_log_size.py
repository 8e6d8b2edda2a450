"""A big log: consuming its start against its tail, and producing while it is cleaned.

    .venv/bin/python benchmarks/broker_log_size.py [--gigabytes 10] [--read-gigabytes 1]
        [--data-dir DIR] [--reads N] [--cold-start | --cold-both]

One broker (fsync on) holds a one-partition topic of GIGABYTES (10 KB values, keys
repeating every 10,000 records, 256 MB segments), written through librdkafka. Then:

1. consume: READ-GIGABYTES from offset 0 and the same amount ending at the log end,
   each by a fresh librdkafka consumer; the two rates should match (no cost grows
   with the offset or with the number of segments before it);
2. produce while the big log is cleaned: 100-byte records (acks=all) to another
   topic, first with the broker otherwise idle, then while retention deletes half of
   the big log (retention.bytes lowered), then while compaction cleans it
   (cleanup.policy=compact). Each phase produces for the same time; the figures are
   each phase's rate over the idle one.

``--cold-start`` drops the start's segments from the page cache before each read of
it (a log written long ago), ``--cold-both`` the tail's as well, so that both reads
come from the disk and the ratio compares the broker's reads alone.

The data directory is removed at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from statistics import median

from broker_restart import bulk_producer
from broker_throughput import free_port, wait_listening

BIG = "big"
PROBE = "probe"
VALUE_BYTES = 10_000
KEYS = 10_000
SEGMENT_BYTES = 256 * 2**20


def start_broker(data: Path, port: int) -> subprocess.Popen[bytes]:
    properties = data.parent / "server.properties"
    properties.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:{port}\n"
        "log.retention.check.interval.ms=2000\n"
        "log.cleaner.backoff.ms=2000\n"
    )
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headrace",
            "broker",
            "--data-dir",
            str(data),
            "--config",
            str(properties),
            "--fsync",
            "always",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def create(bootstrap: str, topic: str, partitions: int, configs: dict[str, str]) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, partitions, 1, config=configs)
    for future in admin.create_topics([new]).values():
        future.result(60)


def alter(bootstrap: str, topic: str, configs: dict[str, str]) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
    from confluent_kafka.admin._resource import ResourceType

    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()
    ]
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(60)


def fill(bootstrap: str, total_bytes: int) -> int:
    producer = bulk_producer(bootstrap)
    records = total_bytes // VALUE_BYTES
    value = b"v" * VALUE_BYTES
    started = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(BIG, value, key=b"k%d" % (i % KEYS), partition=0)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
    if producer.flush(900):
        raise RuntimeError("fill did not complete")
    took = time.perf_counter() - started
    print(f"filled {records:,} records ({total_bytes / 1e9:.1f} GB) in {took:.0f} s", flush=True)
    return records


def consume_rate(bootstrap: str, start: int, count: int) -> float:
    """Bytes a second reading ``count`` records of the big topic from offset ``start``."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"size-{start}",
            "enable.auto.commit": False,
            "fetch.queue.backoff.ms": 10,
            "fetch.max.bytes": 52_428_800,
        }
    )
    consumer.assign([TopicPartition(BIG, 0, start)])
    # The clock starts at the first record: the consumer's connection and metadata
    # round trips cost the same at any offset, and over a read of about a second they
    # would weigh as much as the difference being measured.
    seen, size = 0, 0
    started = None
    deadline = time.perf_counter() + 600
    while seen < count and time.perf_counter() < deadline:
        for message in consumer.consume(1000, 1.0):
            if message.error() is None:
                if started is None:
                    started = time.perf_counter()
                else:
                    size += len(message.value() or b"")
                seen += 1
    took = time.perf_counter() - (started or 0.0)
    consumer.close()
    if seen < count:
        raise RuntimeError(f"read only {seen} of {count} from offset {start}")
    return size / took


def produce_for(bootstrap: str, seconds: float) -> float:
    """Records a second of 100-byte acks=all produces to the probe topic."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 200_000,
        }
    )
    delivered = 0

    def count(error: object, _message: object) -> None:
        nonlocal delivered
        if error is None:
            delivered += 1

    messages = [{"value": b"x" * 100, "callback": count} for _ in range(1000)]
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        try:
            producer.produce_batch(PROBE, messages, partition=delivered % 3)
        except BufferError:
            producer.poll(0.005)
        producer.poll(0)
    producer.flush(120)
    return delivered / (time.perf_counter() - started)


def evict_start(directory: Path, read_bytes: int) -> int:
    """Drop the first segments of the big log (those a read of ``read_bytes`` from the
    start touches) from the page cache, and only those: ``posix_fadvise(DONTNEED)`` on
    this log's own files, which the kernel honours for pages already on disk. The read
    from the start then comes from the disk, as for a log written long ago, while the
    tail stays cached as a just-written tail is. Returns how many segments."""
    return _evict(sorted(directory.glob("*.log"))[: read_bytes // SEGMENT_BYTES + 2])


def evict_tail(directory: Path, read_bytes: int) -> int:
    """The same for the last segments, those a read of ``read_bytes`` ending at the log
    end touches: with both evicted, start and tail are read from the same medium."""
    return _evict(sorted(directory.glob("*.log"))[-(read_bytes // SEGMENT_BYTES + 2) :])


def _evict(segments: list[Path]) -> int:
    for path in segments:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # DONTNEED drops clean pages only
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return len(segments)


def directory_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.glob("*.log"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gigabytes", type=float, default=10.0)
    parser.add_argument("--read-gigabytes", type=float, default=1.0)
    parser.add_argument("--reads", type=int, default=2, help="of each, alternating; median")
    parser.add_argument("--seconds", type=float, default=15.0, help="of each produce phase")
    parser.add_argument("--data-dir", type=Path, default=None, help="parent of the data dir")
    parser.add_argument(
        "--cold-start",
        action="store_true",
        help="drop the log's first segments from the page cache before each read from the start",
    )
    parser.add_argument(
        "--cold-both",
        action="store_true",
        help="drop the segments each read touches from the page cache before it, start and tail",
    )
    args = parser.parse_args()
    parent = Path(tempfile.mkdtemp(prefix="log-size-bench-", dir=args.data_dir))
    data = parent / "data"
    data.mkdir()
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    print(
        f"{args.gigabytes} GB log, fsync on; load average {os.getloadavg()[0]:.1f}"
        f" on {os.cpu_count()} cores",
        flush=True,
    )
    proc = start_broker(data, port)
    try:
        wait_listening(port, proc)
        create(bootstrap, BIG, 1, {"segment.bytes": str(SEGMENT_BYTES)})
        create(bootstrap, PROBE, 3, {})
        records = fill(bootstrap, int(args.gigabytes * 1e9))
        read = int(args.read_gigabytes * 1e9) // VALUE_BYTES
        # librdkafka reads read_committed: the broker's first such fetch of a partition
        # loads its producer state (a replay of the log without a snapshot). Done once
        # here, timed apart, so that neither measured read pays for it.
        started = time.perf_counter()
        consume_rate(bootstrap, 0, 1)
        print(f"first fetch: {time.perf_counter() - started:.1f} s", flush=True)
        heads, tails = [], []
        for _ in range(args.reads):
            if args.cold_both:
                evict_tail(data / f"{BIG}-0", read * VALUE_BYTES)
            tails.append(consume_rate(bootstrap, records - read, read))
            if args.cold_start or args.cold_both:
                evict_start(data / f"{BIG}-0", read * VALUE_BYTES)
            heads.append(consume_rate(bootstrap, 0, read))
            print(
                f"  read: start {heads[-1] / 2**20:.0f} MiB/s, tail {tails[-1] / 2**20:.0f} MiB/s",
                flush=True,
            )
        head, tail = median(heads), median(tails)
        print(
            f"consume {read:,} records: from the start {head / 2**20:.0f} MiB/s, from the"
            f" tail {tail / 2**20:.0f} MiB/s; start/tail {head / tail:.2f}"
            f" (load average {os.getloadavg()[0]:.1f})",
            flush=True,
        )
        idle = produce_for(bootstrap, args.seconds)
        print(f"produce, idle: {idle:,.0f} rec/s", flush=True)
        big_dir = data / f"{BIG}-0"
        before = directory_bytes(big_dir)
        half = str(int(args.gigabytes * 1e9 / 2))
        threading.Timer(1.0, alter, (bootstrap, BIG, {"retention.bytes": half})).start()
        retention = produce_for(bootstrap, args.seconds)
        after = directory_bytes(big_dir)
        print(
            f"produce while retention runs: {retention:,.0f} rec/s, {retention / idle:.2f}"
            f" of idle (big log {before / 1e9:.1f} -> {after / 1e9:.1f} GB)",
            flush=True,
        )
        threading.Timer(1.0, alter, (bootstrap, BIG, {"cleanup.policy": "compact"})).start()
        compaction = produce_for(bootstrap, args.seconds)
        cleaned = directory_bytes(big_dir)
        print(
            f"produce while compaction runs: {compaction:,.0f} rec/s, {compaction / idle:.2f}"
            f" of idle (big log {after / 1e9:.1f} -> {cleaned / 1e9:.1f} GB;"
            f" load average {os.getloadavg()[0]:.1f})",
            flush=True,
        )
        idle_again = produce_for(bootstrap, args.seconds)
        print(f"produce, idle again: {idle_again:,.0f} rec/s", flush=True)
    finally:
        proc.terminate()
        proc.wait(120)
        shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    main()
