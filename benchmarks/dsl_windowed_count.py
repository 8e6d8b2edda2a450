"""Records per second through a windowed count on RocksDB, in-process, with no I/O.

The topology is ``stream -> group_by_key -> windowed_by(1-minute tumbling windows,
5 s grace) -> count`` on the default store: RocksDB, cached, changelogged. Consumed
records (string keys over ``--keys`` keys, timestamps advancing 1 ms per 10 records
with up to 2 s of disorder) are built before the clock starts and fed to
``TaskExecutor.process_partition`` in batches, as the runtime feeds a task; the task
commits (``flush``) every 30,000 records, so the cache forwards and logs its coalesced
updates, and produced records (changelog, output) are taken with ``drain()``. The time
covers deserializing keys, window assignment and late checks, the store stack
(metered, cached, changelogged RocksDB), cache flushes and, with ``to_stream().to()``,
building and serializing the output records.

Both wall-clock and CPU-time rates are printed: on a machine shared with other work the
CPU-time rate (one thread, so CPU seconds are the seconds this benchmark really ran)
is the steadier figure; on an idle machine the two agree.

Run: ``python benchmarks/dsl_windowed_count.py [--records N] [--keys K] [--batch B] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import gc
import pathlib
import random
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from headrace.dsl import Serdes, StreamsBuilder, TimeWindows, WindowedSerdes, materialized
from headrace.streams import ConsumedRecord, TaskExecutor

WINDOW = 60_000
COMMIT_EVERY = 30_000


def build(with_output: bool, store: str) -> Any:
    builder = StreamsBuilder()
    counts = (
        builder.stream("clicks", key_serde=Serdes.string(), value_serde=Serdes.bytes())
        .group_by_key()
        .windowed_by(TimeWindows.of_size(WINDOW).grace(5_000))
        .count(materialized=materialized("counts", store=store))  # type: ignore[arg-type]
    )
    if with_output:
        counts.to_stream().to(
            "counts-out",
            key_serde=WindowedSerdes.time_windowed(Serdes.string(), WINDOW),
            value_serde=Serdes.long(),
        )
    return builder.build()


def events(records: int, keys: int) -> list[ConsumedRecord]:
    rng = random.Random(7)
    names = [f"key-{i}".encode() for i in range(keys)]
    start = 1_700_000_000_000
    return [
        (
            "clicks",
            0,
            i,
            start + max(0, i // 10 - rng.randrange(0, 2_000)),
            names[rng.randrange(keys)],
            b"1",
            (),
        )
        for i in range(records)
    ]


def run(
    label: str, consumed: list[ConsumedRecord], batch: int, with_output: bool, store: str
) -> float:
    batches = [consumed[i : i + batch] for i in range(0, len(consumed), batch)]
    with tempfile.TemporaryDirectory() as state_dir:
        task = TaskExecutor(
            build(with_output, store),
            0,
            0,
            {"application_id": "bench"},
            state_dir=pathlib.Path(state_dir),
        )
        task.init()
        # The prepared input (a million tuples) stands in for records the runtime would
        # fetch and drop batch by batch: keep it out of the collector's full passes.
        gc.collect()
        gc.freeze()
        produced = 0
        since_commit = 0
        started, cpu_started = time.perf_counter(), time.process_time()
        for b in batches:
            task.process_partition("clicks", 0, b)
            since_commit += len(b)
            if since_commit >= COMMIT_EVERY:
                task.flush()
                since_commit = 0
            produced += len(task.drain())
        task.flush()
        produced += len(task.drain())
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
        total = sum(count for _, count in task.stores["counts"].all())
        task.close()
        gc.unfreeze()
    assert total == len(consumed), (total, len(consumed))  # nothing late with 5 s grace
    rate, cpu_rate = len(consumed) / elapsed, len(consumed) / cpu
    print(
        f"{label:<36} {rate:>10,.0f} records/s wall, {cpu_rate:>10,.0f} per CPU second "
        f"({produced:,} records produced)"
    )
    return cpu_rate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    consumed = events(args.records, args.keys)
    print(
        f"windowed count, {args.records:,} records over {args.keys:,} keys, "
        f"batches of {args.batch}, commit every {COMMIT_EVERY:,}"
    )
    for label, with_output, store in (
        ("rocksdb, count only (changelog)", False, "rocksdb"),
        ("rocksdb, count -> to_stream -> to", True, "rocksdb"),
        ("memory, count -> to_stream -> to", True, "memory"),
    ):
        rates = [run(label, consumed, args.batch, with_output, store) for _ in range(args.repeats)]
        print(f"{'':<36} best {max(rates):>10,.0f} records per CPU second")


if __name__ == "__main__":
    main()
