"""Stateful throughput as the key space grows: 10,000 keys against 10,000,000.

Two topologies on the default store (RocksDB, cached, changelogged), each fed the same
number of records (``--records``) twice in one run, once over ``--small`` keys and
once over ``--large`` keys:

- ``windowed``: ``stream -> group_by_key -> windowed_by(1-minute tumbling, 5 s grace)
  -> count`` (as ``dsl_windowed_count.py``);
- ``aggregate``: ``stream -> group_by_key -> aggregate(sum of the values)``.

Record ``i`` has key ``(i * 7_368_787) % keys`` (a prime stride: over ``keys``
records every key comes exactly once, so 10,000,000 records over 10,000,000 keys put
every key into the store, far beyond the write cache's 100,000 entries, and every
read misses the cache); its timestamp advances 1 ms per 10 records. Records are
built batch by batch outside the clock and fed to ``TaskExecutor.process_partition``
as the runtime feeds a task, with a commit (``flush``) every 30,000 records and the
produced records taken with ``drain()``. The clock (CPU time of this one thread, the
steady figure on a shared machine; wall time printed beside it) covers only
processing, commits and drains. The garbage collector is tuned as an application's
process tunes it (``streams/runtime/_gc.py``: start-up objects frozen, a young-generation
threshold of 200,000); ``--default-gc`` leaves CPython's defaults, under which the
collector's runs land on whatever allocates (most of all a commit's flush).

The figure that matters is the ratio: the large key space's rate over the small one's
(goal: at least 0.5).

``--phases`` also prints, per record, the thread CPU time of the store's RocksDB
multi-gets (``RocksDBTable.get_many``), of the task's commits (``TaskExecutor.flush``)
and, within them, of RocksDB's batch writes (``RocksDBTable.write``), and of the
measuring thread in all (the process CPU beyond it is RocksDB's background flushes and
compactions): where the large key space's extra cost is, without a profiler's overhead.

Run: ``python benchmarks/state_scale.py [--records N] [--small K] [--large K]
[--topologies windowed,aggregate] [--profile FILE] [--phases] [--default-gc]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import pathlib
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from headrace.dsl import Serdes, StreamsBuilder, TimeWindows, materialized
from headrace.state._rocksdb import RocksDBTable
from headrace.streams import ConsumedRecord, TaskExecutor
from headrace.streams.runtime._gc import tune_for_streaming

WINDOW = 60_000
COMMIT_EVERY = 30_000
BATCH = 1000
STRIDE = 7_368_787  # a prime: coprime with every key count used here
START = 1_700_000_000_000


def build(topology: str) -> Any:
    builder = StreamsBuilder()
    grouped = builder.stream(
        "input", key_serde=Serdes.string(), value_serde=Serdes.long()
    ).group_by_key()
    if topology == "windowed":
        grouped.windowed_by(TimeWindows.of_size(WINDOW).grace(5_000)).count(
            materialized=materialized("state")
        )
    else:
        grouped.aggregate(
            lambda: 0,
            lambda _k, v, total: total + v,
            materialized=materialized("state", value_serde=Serdes.long()),
        )
    return builder.build()


def batches(records: int, keys: int) -> Iterator[list[ConsumedRecord]]:
    one = (1).to_bytes(8, "big")
    for lo in range(0, records, BATCH):
        yield [
            (
                "input",
                0,
                i,
                START + i // 10,
                b"key-%d" % ((i * STRIDE) % keys),
                one,
                (),
            )
            for i in range(lo, min(lo + BATCH, records))
        ]


class Phases:
    """Thread CPU seconds spent in a few methods while installed (see ``--phases``)."""

    NAMES = {
        "multi-get": (RocksDBTable, "get_many"),
        "commits": (TaskExecutor, "flush"),
        "batch write": (RocksDBTable, "write"),
    }

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(self.NAMES, 0.0)
        self._originals: dict[str, Any] = {}

    def _timed(self, name: str, method: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds[name] += time.thread_time() - started

        return timed

    def __enter__(self) -> Phases:
        for name, (cls, attribute) in self.NAMES.items():
            self._originals[name] = getattr(cls, attribute)
            setattr(cls, attribute, self._timed(name, self._originals[name]))
        return self

    def __exit__(self, *_exc: object) -> None:
        for name, (cls, attribute) in self.NAMES.items():
            setattr(cls, attribute, self._originals[name])

    def report(self, records: int) -> str:
        """Each phase's microseconds a record; "this thread" is the measuring thread's
        whole share (the rest of the process CPU is RocksDB's flush and compaction
        threads)."""
        return ", ".join(f"{n} {s * 1e6 / records:.2f}" for n, s in self.seconds.items())


def run(
    topology: str,
    records: int,
    keys: int,
    default_gc: bool = False,
    phases: Phases | None = None,
) -> float:
    with tempfile.TemporaryDirectory(prefix="headrace-state-scale-") as state_dir:
        task = TaskExecutor(
            build(topology), 0, 0, {"application_id": "bench"}, state_dir=pathlib.Path(state_dir)
        )
        task.init()
        if default_gc:
            gc.collect()
        else:
            tune_for_streaming()
        wall = cpu = thread = 0.0
        since_commit = 0
        for batch in batches(records, keys):
            started, cpu_started = time.perf_counter(), time.process_time()
            thread_started = time.thread_time()
            task.process_partition("input", 0, batch)
            since_commit += len(batch)
            if since_commit >= COMMIT_EVERY:
                task.flush()
                since_commit = 0
            task.drain()
            wall += time.perf_counter() - started
            cpu += time.process_time() - cpu_started
            thread += time.thread_time() - thread_started
        started, cpu_started = time.perf_counter(), time.process_time()
        thread_started = time.thread_time()
        task.flush()
        task.drain()
        wall += time.perf_counter() - started
        cpu += time.process_time() - cpu_started
        thread += time.thread_time() - thread_started
        # Checked outside the clock: every record is counted once.
        store = task.stores["state"]
        total = sum(v for _k, v in store.all())
        task.close()
    assert total == records, (total, records)
    if phases is not None:
        phases.seconds["this thread"] = thread
    print(
        f"{topology:<10} {keys:>12,} keys {records / wall:>10,.0f} records/s wall, "
        f"{records / cpu:>10,.0f} per CPU second",
        flush=True,
    )
    return records / cpu


def timed_run(topology: str, records: int, keys: int, args: argparse.Namespace) -> float:
    if not args.phases:
        return run(topology, records, keys, args.default_gc)
    with Phases() as phases:
        rate = run(topology, records, keys, args.default_gc, phases)
    print(
        f"{topology:<10} {keys:>12,} keys, us a record: {1e6 / rate:.2f} in all (process "
        f"CPU); thread CPU: {phases.report(records)}",
        flush=True,
    )
    return rate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=10_000_000)
    parser.add_argument("--topologies", default="windowed,aggregate")
    parser.add_argument("--profile", help="profile the large run of each topology into FILE")
    parser.add_argument(
        "--phases", action="store_true", help="time RocksDB reads, commits and batch writes"
    )
    parser.add_argument(
        "--default-gc", action="store_true", help="CPython's collector settings, not the app's"
    )
    args = parser.parse_args()
    print(
        f"{args.records:,} records, batches of {BATCH}, commit every {COMMIT_EVERY:,}, "
        f"{'default' if args.default_gc else 'application'} collector settings; "
        f"load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    for topology in args.topologies.split(","):
        small = timed_run(topology, args.records, args.small, args)
        if args.profile:
            import cProfile

            profiler = cProfile.Profile()
            large = profiler.runcall(timed_run, topology, args.records, args.large, args)
            profiler.dump_stats(f"{args.profile}.{topology}")
        else:
            large = timed_run(topology, args.records, args.large, args)
        print(
            f"{topology:<10} {args.large:,} keys at {large / small:.2f} of the "
            f"{args.small:,}-key rate (goal 0.5); load {os.getloadavg()[0]:.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
