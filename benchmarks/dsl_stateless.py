"""Records per second through a compiled stateless topology, with no I/O.

The topology is ``stream -> filter -> map_values -> to``. Consumed records are built
up front and fed to the task executor in batches (the way the runtime feeds it), and
produced records are taken with ``drain()``; the time measured is the executor alone:
deserialize, filter, map, serialize, collect. Half of the records pass the filter.

Run: ``python benchmarks/dsl_stateless.py [--records N] [--batch N]``.
"""

from __future__ import annotations

import argparse
import gc
import pathlib
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from headrace.dsl import Serde, Serdes, StreamsBuilder
from headrace.streams import ConsumedRecord, TaskExecutor


def build(
    serde: Serde[Any], mapper: Callable[[Any], Any], predicate: Callable[[Any, Any], bool]
) -> Any:
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=Serdes.bytes(), value_serde=serde)
        .filter(predicate)
        .map_values(mapper)
        .to("out", key_serde=Serdes.bytes(), value_serde=serde)
    )
    return builder.build()


def run(
    name: str,
    serde: Serde[Any],
    values: list[Any],
    mapper: Callable[[Any], Any],
    predicate: Callable[[Any, Any], bool],
    records: int,
    batch: int,
    repeats: int,
) -> float:
    topology = build(serde, mapper, predicate)
    encoded = [serde.serialize("in", v) for v in values]
    consumed: list[ConsumedRecord] = [
        ("in", 0, i, 1_700_000_000_000 + i, b"k%d" % (i % 1000), encoded[i % len(encoded)], ())
        for i in range(records)
    ]
    batches = [consumed[i : i + batch] for i in range(0, records, batch)]
    best = 0.0
    with tempfile.TemporaryDirectory() as state_dir:
        task = TaskExecutor(topology, 0, 0, state_dir=pathlib.Path(state_dir))
        task.init()
        for _ in range(repeats):
            gc.collect()
            produced = 0
            start = time.perf_counter()
            for b in batches:
                task.process_partition("in", 0, b)
                produced += len(task.drain())
            elapsed = time.perf_counter() - start
            best = max(best, records / elapsed)
        task.close()
    print(f"{name:<34} {best:>12,.0f} records/s   ({produced:,} of {records:,} produced)")
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    common = (args.records, args.batch, args.repeats)
    print(
        f"filter + map_values + to, {args.records:,} records, batches of {args.batch}, best of {args.repeats}"
    )
    run(
        "bytes values",
        Serdes.bytes(),
        [b"%d" % i for i in range(1000)],
        lambda v: v + b"!",
        lambda k, v: v[-1] % 2 == 0,
        *common,
    )
    run(
        "string values (UTF-8)",
        Serdes.string(),
        [str(i) for i in range(1000)],
        lambda v: v + "!",
        lambda k, v: v[-1] in "02468",
        *common,
    )
    run(
        "long values (8-byte big-endian)",
        Serdes.long(),
        list(range(1000)),
        lambda v: v * 3,
        lambda k, v: v % 2 == 0,
        *common,
    )
    run(
        "json values (orjson)",
        Serdes.json(),
        [{"id": i, "t": 20.5} for i in range(1000)],
        lambda v: v["t"],
        lambda k, v: v["id"] % 2 == 0,
        *common,
    )
    # The self-describing default of internal topics and stores, on the same values: its
    # cost against the serde a user would otherwise have to name.
    auto = Serdes.auto()
    run(
        "auto: string values",
        auto,
        [str(i) for i in range(1000)],
        lambda v: v + "!",
        lambda k, v: v[-1] in "02468",
        *common,
    )
    run(
        "auto: int values",
        auto,
        list(range(1000)),
        lambda v: v * 3,
        lambda k, v: v % 2 == 0,
        *common,
    )
    run(
        "auto: dict values",
        auto,
        [{"id": i, "t": 20.5} for i in range(1000)],
        lambda v: v["t"],
        lambda k, v: v["id"] % 2 == 0,
        *common,
    )
    run(
        "auto: tuple values",
        auto,
        [(i, "x", 20.5) for i in range(1000)],
        lambda v: v[2],
        lambda k, v: v[0] % 2 == 0,
        *common,
    )


if __name__ == "__main__":
    main()
