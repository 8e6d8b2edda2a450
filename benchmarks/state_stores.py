"""State store throughput: puts and gets on both backends, and a windowed count.

Run: ``python benchmarks/state_stores.py [--records N] [--keys K]``

The windowed-count workload is what a ``windowed_by(...).count()`` does per
record: read the window's current count, add one, write it back. It runs on the
full RocksDB stack a builder makes (typed, metered, caching, changelogging) with a
commit (flush) every 30,000 records, and on the bare RocksDB window store.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from headrace.state import (
    InMemoryKeyValueStore,
    RocksDBKeyValueStore,
    RocksDBWindowStore,
    Stores,
    StoreTestContext,
)

WINDOW = 60_000
COMMIT_EVERY = 30_000  # about 100 ms at the 300,000 records/s goal, the exactly-once default


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:>12,.0f} ops/s"


def timed(fn: Callable[[], int]) -> tuple[int, float]:
    started = time.perf_counter()
    n = fn()
    return n, time.perf_counter() - started


def kv_figures(n: int, tmp: Path) -> None:
    keys = [i.to_bytes(8, "big") for i in range(n)]
    random.Random(1).shuffle(keys)
    value = b"v" * 16
    for label, store in (
        ("memory ", InMemoryKeyValueStore("kv-mem")),
        ("rocksdb", RocksDBKeyValueStore("kv-rocks")),
    ):
        store.init(StoreTestContext(state_dir=tmp))

        def puts(store: object = store) -> int:
            put = store.put  # type: ignore[attr-defined]
            for key in keys:
                put(key, value)
            return n

        def batch(store: object = store) -> int:
            store.put_all([(k, value) for k in keys])  # type: ignore[attr-defined]
            return n

        def gets(store: object = store) -> int:
            get = store.get  # type: ignore[attr-defined]
            for key in keys:
                get(key)
            return n

        def scan(store: object = store) -> int:
            count = 0
            for _ in store.all():  # type: ignore[attr-defined]
                count += 1
            return count

        for name, fn in (("put", puts), ("put_all", batch), ("get", gets), ("scan", scan)):
            count, seconds = timed(fn)
            print(f"  kv {label} {name:<8}{rate(count, seconds)}")
        store.close()


def windowed_events(records: int, keys: int) -> list[tuple[bytes, int]]:
    """Keys uniform over ``keys``; timestamps advance 1 ms per 10 records with jitter."""
    rng = random.Random(7)
    names = [f"key-{i}".encode() for i in range(keys)]
    return [
        (names[rng.randrange(keys)], max(0, i // 10 - rng.randrange(0, 2_000)))
        for i in range(records)
    ]


class Int64Serde:
    def serialize(self, topic: str, obj: int) -> bytes | None:
        return obj.to_bytes(8, "big")

    def deserialize(self, topic: str, data: bytes) -> int:
        return int.from_bytes(data, "big")


def windowed_count_full_stack(events: list[tuple[bytes, int]], tmp: Path) -> tuple[float, int]:
    store = (
        Stores.window_store("counts", retention=10 * WINDOW, window_size=WINDOW)
        .with_value_serde(Int64Serde())
        .with_caching_enabled(max_entries=50_000)
        .build()
    )
    context = StoreTestContext(state_dir=tmp / "full")
    logged = 0

    def log_change(store_name: str, key: bytes, value: bytes | None, timestamp: int) -> None:
        nonlocal logged
        logged += 1

    context.log_change = log_change  # type: ignore[method-assign]
    store.init(context)
    get, put = store.get, store.put
    started = time.perf_counter()
    for i, (key, ts) in enumerate(events):
        if ts > context.stream_time:
            context.stream_time = ts
        start = ts - ts % WINDOW
        put(key, (get(key, start) or 0) + 1, start)
        if i % COMMIT_EVERY == COMMIT_EVERY - 1:
            store.flush()
    store.flush()
    seconds = time.perf_counter() - started
    total = sum(count for _, count in store.all())
    store.close()
    assert total == len(events), (total, len(events))
    return seconds, logged


def windowed_count_bare(events: list[tuple[bytes, int]], tmp: Path) -> float:
    store = RocksDBWindowStore("counts-bare", retention=10 * WINDOW, window_size=WINDOW)
    context = StoreTestContext(state_dir=tmp / "bare")
    store.init(context)
    get, put = store.get, store.put
    started = time.perf_counter()
    for key, ts in events:
        if ts > context.stream_time:
            context.stream_time = ts
        start = ts - ts % WINDOW
        old = get(key, start)
        count = 1 if old is None else int.from_bytes(old, "big") + 1
        put(key, count.to_bytes(8, "big"), start)
    store.flush()
    seconds = time.perf_counter() - started
    total = sum(int.from_bytes(v, "big") for _, v in store.all())
    store.close()
    assert total == len(events), (total, len(events))
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--kv-ops", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        print(f"key-value stores, {args.kv_ops:,} distinct 8-byte keys, 16-byte values:")
        kv_figures(args.kv_ops, tmp)
        events = windowed_events(args.records, args.keys)
        print(
            f"windowed count, {args.records:,} updates over {args.keys:,} keys, 1-minute windows:"
        )
        seconds, logged = windowed_count_full_stack(events, tmp)
        print(
            f"  rocksdb, typed+metered+caching+logging, commit every {COMMIT_EVERY:,}: "
            f"{rate(len(events), seconds)} ({logged:,} changelog records)"
        )
        seconds = windowed_count_bare(events, tmp)
        print(f"  rocksdb, bare bytes window store:{rate(len(events), seconds)}")


if __name__ == "__main__":
    main()
