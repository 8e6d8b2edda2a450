"""Produce and consume as the partition count grows: 1, 100 and 1,000, headrace against Tansu.

    .venv/bin/python benchmarks/broker_partitions.py [--records 300000] [--size 100]
        [--partitions 1,100,1000] [--rounds 1] [--fsync-never] [--other-python PYTHON]

The same total of keyed records (distinct keys, so librdkafka's partitioner spreads
them over every partition) goes through kcat, a client nobody here wrote: ``kcat -P``
(acks=all) reads them from a file, then ``kcat -C -e`` reads every partition from the
beginning to its end. headrace runs with fsync on; Tansu (memory) is started the way
``broker_throughput.py`` starts it, at each count in the same run. Each broker's rate at
N partitions is reported as a fraction of its own 1-partition rate, and headrace's rate
as a fraction of Tansu's at the same count: the machine is shared, so the ratios are
what to compare. For headrace the broker's CPU seconds per request served (counted
by its own metrics: produce requests while producing; while consuming, ListOffsets
and fetches) are printed too: unlike records per second, they do not move with the machine's load.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from broker_throughput import (
    broker_cpu_seconds,
    free_port,
    headrace_broker,
    tansu_broker,
)

TOPIC = "partitions"
# The same client settings for both brokers: librdkafka's batching, acks=all.
PRODUCER_SETTINGS = (
    "acks=all",
    "linger.ms=5",
    "batch.size=1000000",
    "queue.buffering.max.messages=500000",
    "compression.type=none",
)


def kcat_binary() -> str:
    binary = shutil.which("kcat")
    if binary is None:
        raise SystemExit("kcat is required (Debian package kcat)")
    return binary


def kcat_environment(directory: Path) -> dict[str, str]:
    """Run kcat on the librdkafka that confluent-kafka ships (2.x, recent).

    Debian's kcat links librdkafka 2.0.2, whose ApiVersions parsing fails against
    Tansu ("Read underflow"); loading the newer library under the name kcat links
    lets both brokers be measured with the same client.
    """
    import confluent_kafka

    libs = Path(confluent_kafka.__file__).parent.with_name("confluent_kafka.libs")
    found = sorted(libs.glob("librdkafka-*.so.1"))
    if not found:
        raise SystemExit(f"no librdkafka in {libs}")
    (directory / "librdkafka.so.1").symlink_to(found[0])
    return {**os.environ, "LD_LIBRARY_PATH": str(directory)}


def write_input(path: Path, records: int, size: int) -> None:
    """``key:value`` lines with distinct keys, values padded to ``size`` bytes."""
    with path.open("w") as out:
        for i in range(records):
            key = f"key-{i}"
            out.write(f"{key}:{'x' * (size - 1)}{i % 10}\n")


def create_topic(bootstrap: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, partitions, 1)]).values():
        future.result(60)
    # Wait until metadata shows every partition with a leader, as kcat will ask.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        topic = admin.list_topics(TOPIC, timeout=10).topics.get(TOPIC)
        if (
            topic is not None
            and len(topic.partitions) == partitions
            and all(p.leader >= 0 for p in topic.partitions.values())
        ):
            return
        time.sleep(0.2)
    raise RuntimeError(f"{TOPIC} did not show {partitions} partitions")


def produce(bootstrap: str, source: Path, env: dict[str, str]) -> float:
    args = [kcat_binary(), "-P", "-b", bootstrap, "-t", TOPIC, "-K:", "-l"]
    for setting in PRODUCER_SETTINGS:
        args += ["-X", setting]
    started = time.perf_counter()
    done = subprocess.run(
        [*args, str(source)], capture_output=True, timeout=600, check=False, env=env
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"kcat -P failed: {done.stderr.decode()[-2000:]}")
    return elapsed


def consume(bootstrap: str, records: int, env: dict[str, str]) -> float:
    args = [
        kcat_binary(),
        "-C",
        "-b",
        bootstrap,
        "-t",
        TOPIC,
        "-o",
        "beginning",
        "-e",
        "-q",
        "-f",
        "%p\n",
        "-X",
        "fetch.queue.backoff.ms=10",  # as broker_throughput.py: do not idle on a full queue
    ]
    started = time.perf_counter()
    done = subprocess.run(args, capture_output=True, timeout=600, check=False, env=env)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"kcat -C failed: {done.stderr.decode()[-2000:]}")
    seen = done.stdout.count(b"\n")
    if seen != records:
        raise RuntimeError(f"consumed {seen} records, produced {records}")
    return elapsed


# Where each running headrace broker serves its metrics, by its bootstrap address.
METRICS_URLS: dict[str, str] = {}


@contextmanager
def counted_headrace_broker(fsync: str, python: str | None = None) -> Iterator[str]:
    """A headrace broker that also serves its metrics, so its requests can be counted."""
    port = free_port()
    options = ("--metrics-listen", f"127.0.0.1:{port}")
    broker = headrace_broker(fsync, *options, python=python or sys.executable)
    with broker as bootstrap:
        METRICS_URLS[bootstrap] = f"http://127.0.0.1:{port}/metrics"
        try:
            yield bootstrap
        finally:
            METRICS_URLS.pop(bootstrap, None)


def requests_answered(bootstrap: str) -> float:
    """Requests of every API the broker has answered; NaN for Tansu."""
    url = METRICS_URLS.get(bootstrap)
    if url is None:
        return float("nan")
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    prefix = "headrace_broker_requests_total{"
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix)
    )


@dataclass
class Rates:
    """One run at one partition count: records per second, and the broker's CPU
    microseconds per request served (NaN where the broker is not headrace)."""

    produce: float
    consume: float
    produce_cpu_us: float
    consume_cpu_us: float


def cpu_per_request(bootstrap: str, run: Callable[[], float]) -> tuple[float, float]:
    """Run ``run`` (returning seconds); return those seconds and the broker's CPU us per
    request answered meanwhile (a consumer's are mostly ListOffsets, one per partition,
    and a few fetches)."""
    cpu, served = broker_cpu_seconds(bootstrap), requests_answered(bootstrap)
    seconds = run()
    cpu = broker_cpu_seconds(bootstrap) - cpu
    served = requests_answered(bootstrap) - served
    return seconds, cpu / served * 1e6 if served else float("nan")


def measure(
    broker: AbstractContextManager[str],
    partitions: int,
    source: Path,
    records: int,
    env: dict[str, str],
) -> Rates:
    with broker as bootstrap:
        create_topic(bootstrap, partitions)
        produce_s, produce_cpu = cpu_per_request(bootstrap, lambda: produce(bootstrap, source, env))
        consume_s, consume_cpu = cpu_per_request(
            bootstrap, lambda: consume(bootstrap, records, env)
        )
    return Rates(records / produce_s, records / consume_s, produce_cpu, consume_cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", default="1,100,1000")
    parser.add_argument("--rounds", type=int, default=1, help="medians over this many rounds")
    parser.add_argument("--only", choices=("headrace", "tansu"), default=None)
    parser.add_argument(
        "--fsync-never",
        action="store_true",
        help="also run headrace with --fsync never, to show what the disk's fsyncs cost",
    )
    parser.add_argument(
        "--other-python",
        metavar="PYTHON",
        help="also run another checkout's broker (its .venv/bin/python), fsync on; run the"
        " benchmark from outside both checkouts, or `python -m headrace` finds this one",
    )
    args = parser.parse_args()
    counts = [int(c) for c in args.partitions.split(",")]
    brokers: dict[str, Callable[[], AbstractContextManager[str]]] = {
        "tansu (memory)": tansu_broker,
        "headrace (fsync on)": lambda: counted_headrace_broker("always"),
    }
    if args.fsync_never:
        brokers["headrace (fsync off)"] = lambda: counted_headrace_broker("never")
    if args.other_python:
        other = args.other_python
        brokers["other headrace (fsync on)"] = lambda: counted_headrace_broker("always", other)
        if args.fsync_never:
            brokers["other headrace (fsync off)"] = lambda: counted_headrace_broker("never", other)
    if args.only:
        brokers = {k: v for k, v in brokers.items() if k.startswith(args.only)}
    print(
        f"{args.records:,} keyed records of {args.size} bytes, kcat -P (acks=all) then"
        f" kcat -C -e; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
        flush=True,
    )
    rates: dict[tuple[str, int], list[Rates]] = {}
    with tempfile.TemporaryDirectory(prefix="partitions-bench-") as directory:
        source = Path(directory) / "records.txt"
        write_input(source, args.records, args.size)
        env = kcat_environment(Path(directory))
        for _ in range(args.rounds):
            for count in counts:
                for name, broker in brokers.items():
                    run = measure(broker(), count, source, args.records, env)
                    rates.setdefault((name, count), []).append(run)
                    print(
                        f"{name:<26} {count:>5} partitions   produce {run.produce:>9,.0f} rec/s"
                        f" ({run.produce_cpu_us:5.0f} us CPU/request)   consume"
                        f" {run.consume:>9,.0f} rec/s ({run.consume_cpu_us:5.0f} us CPU/request)",
                        flush=True,
                    )
    report(rates, list(brokers), counts)


def report(rates: dict[tuple[str, int], list[Rates]], names: list[str], counts: list[int]) -> None:
    fields = ("produce", "consume", "produce_cpu_us", "consume_cpu_us")

    def rate(name: str, count: int, which: int) -> float:
        return float(median(getattr(r, fields[which]) for r in rates[(name, count)]))

    print(f"\nmedians; load average now {os.getloadavg()[0]:.1f}")
    print(
        f"{'broker':<26} {'partitions':>10} {'produce':>10} {'x 1-part':>9} {'us/req':>7}"
        f" {'consume':>10} {'x 1-part':>9} {'us/req':>7}"
    )
    for name in names:
        for count in counts:
            produced, consumed = rate(name, count, 0), rate(name, count, 1)
            base = counts[0]
            print(
                f"{name:<26} {count:>10} {produced:>10,.0f} {produced / rate(name, base, 0):>9.2f}"
                f" {rate(name, count, 2):>7.0f} {consumed:>10,.0f}"
                f" {consumed / rate(name, base, 1):>9.2f} {rate(name, count, 3):>7.0f}"
            )
    if len(names) >= 2:
        tansu, ours = names[:2]
        for count in counts:
            print(
                f"headrace / tansu at {count:>5} partitions:"
                f"   produce {rate(ours, count, 0) / rate(tansu, count, 0):.2f}"
                f"   consume {rate(ours, count, 1) / rate(tansu, count, 1):.2f}"
            )


if __name__ == "__main__":
    main()
