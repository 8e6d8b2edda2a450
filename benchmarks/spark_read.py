"""Spark's read of a topic (``format("headrace")``) against raw librdkafka consume and
Spark's own Kafka source (``format("kafka")``).

    .venv/bin/python benchmarks/spark_read.py [--records 1000000] [--size 100]
                                              [--partitions 3] [--repeat 3]
                                              [--driver-memory 2g]

A built-in broker subprocess (fsync never: producing is set-up, not measured) gets N
records of SIZE bytes (``spark_delta_export.py``'s producer). Then, alternating so both
see the same load on a shared machine:

* raw: a librdkafka consumer assigned to every partition consumes everything and only
  counts the messages, the ceiling for any Python reader (with the reader's
  ``fetch.queue.backoff.ms``: librdkafka's 1 s default idles it most of each second);
* spark: ``spark.read.format("headrace")...load()`` over the whole topic, collected
  with ``toArrow()``: the reader hands Spark Arrow record batches (``_arrow.py``), which
  travel to the driver as Arrow. The session starts (and its Python workers warm up on
  a one-row read) before the clock.

* reader alone: the same data source's reader (``BatchReader``) called in this process,
  no Spark: what the reader costs, so the rest of the gap is Spark's own transfer.

* Spark's Kafka source (spark-sql-kafka-0-10, the jars of jvm/spark/) over the same
  topic, collected the same way: at its defaults, and tuned as its documentation allows
  (``kafka.*`` consumer settings: larger fetches, more records a poll).

Each run's readers go in that order, every other run in reverse; each figure is
printed with the 1-minute load average right after it. Reported: each run's rates and
the median of the per-run ratios (goal: 0.7). On a shared machine wall-clock rates
swing with the load, so each run also reports the ratio of CPU seconds spent per
record (raw and reader alone: this process, librdkafka's threads included; Spark: this
process, the Spark JVM and its Python workers), which the load moves far less.
Spark's first read in a session also pays the JVM's warm-up (its JIT), so the first
run's Spark figures are the lowest.

With ``--profile DIR`` the Spark read goes through the same source wrapped so that
each task, in its Python worker, runs the reader under cProfile and times it: seconds
inside the reader (consuming and building batches) against seconds Spark held each
batch before asking for the next. Each task leaves ``DIR/task-*.prof`` and a line in
``DIR/spans.jsonl``; the script prints the spans and the profile's top functions. The
profiler slows the reader, so rates taken with it are not figures to quote.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spark_delta_export import TOPIC, broker, produce

SPARK_KAFKA_TUNED = {
    "kafka.max.partition.fetch.bytes": str(8 << 20),
    "kafka.fetch.max.bytes": str(64 << 20),
    "kafka.max.poll.records": "10000",
    "kafka.receive.buffer.bytes": str(1 << 20),
}
"""Spark's Kafka source tuned through the consumer settings its guide passes through."""


def raw_consume(bootstrap: str, records: int, partitions: int) -> float:
    """librdkafka alone, set as the reader sets it where speed is concerned."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    from headrace.spark_bridge._kafka import FETCH_QUEUE_BACKOFF_MS

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-raw",
            "enable.auto.commit": False,
            "queued.min.messages": 200_000,
            "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
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


def cpu_seconds(spark_tree: bool) -> float:
    """CPU time of this process, and with ``spark_tree`` of the Spark JVM under it and
    every process under that (its Python workers); the broker, also a child of this
    process, is left out: raw consume does not count it either."""
    import psutil

    me = psutil.Process()
    procs = [me]
    if spark_tree:
        for child in me.children():
            if child.name().startswith("java"):
                procs += [child, *child.children(recursive=True)]
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system
    return total


def timed(run: Any, spark_tree: bool) -> tuple[float, float]:
    """``run()``'s rate and the CPU seconds it cost."""
    cpu = cpu_seconds(spark_tree)
    rate = float(run())
    return rate, cpu_seconds(spark_tree) - cpu


PROFILE_ENV = "HEADRACE_BENCH_PROFILE_DIR"
"""Where profiled tasks write; set before the session starts, so Spark's Python
workers inherit it."""


def profiled_source() -> Any:
    """``format("headrace_profiled")``: headrace's source, each task's read profiled
    and timed in its worker (cloudpickle ships this class by value)."""
    from headrace.spark_bridge._source import BatchReader, HeadraceDataSource

    class ProfiledReader(BatchReader):
        def read(self, partition: Any) -> Any:
            import cProfile
            import uuid

            directory = Path(os.environ[PROFILE_ENV])
            profile = cProfile.Profile()
            inside = held = 0.0
            sizes = []
            began = time.perf_counter()
            batches = super().read(partition)
            while True:
                asked = time.perf_counter()
                profile.enable()
                try:
                    batch = next(batches, None)
                finally:
                    profile.disable()
                got = time.perf_counter()
                inside += got - asked
                if batch is None:
                    break
                sizes.append(batch.num_rows)
                yield batch
                held += time.perf_counter() - got
            name = f"task-{uuid.uuid4().hex[:8]}"
            profile.dump_stats(str(directory / f"{name}.prof"))
            span = {
                "task": name,
                "seconds": time.perf_counter() - began,
                "in_reader": inside,
                "held_by_spark": held,
                "batches": len(sizes),
                "rows": sum(sizes),
                "largest_batch": max(sizes, default=0),
            }
            with open(directory / "spans.jsonl", "a") as out:
                out.write(json.dumps(span) + "\n")

    class ProfiledSource(HeadraceDataSource):
        @classmethod
        def name(cls) -> str:
            return "headrace_profiled"

        def reader(self, schema: Any) -> Any:
            from headrace.spark_bridge._options import parse_options

            return ProfiledReader(parse_options(self.options, streaming=False))

    return ProfiledSource


def print_profile(directory: Path) -> None:
    """Each profiled task's spans, then the top functions over all of them."""
    import pstats

    for line in (directory / "spans.jsonl").read_text().splitlines():
        s = json.loads(line)
        print(
            f"task {s['task']}: {s['rows']:,} rows in {s['batches']} batches (largest"
            f" {s['largest_batch']:,}), {s['seconds']:.2f} s: {s['in_reader']:.2f} s in the"
            f" reader, {s['held_by_spark']:.2f} s held by Spark"
        )
    profiles = sorted(str(p) for p in directory.glob("task-*.prof"))
    if profiles:
        pstats.Stats(*profiles).sort_stats("tottime").print_stats(15)


def spark_read(
    spark: Any,
    bootstrap: str,
    records: int,
    fmt: str = "headrace",
    options: dict[str, str] | None = None,
) -> float:
    reader = spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    frame = reader.option("subscribe", TOPIC).load()
    started = time.perf_counter()
    table = frame.toArrow()
    elapsed = time.perf_counter() - started
    if table.num_rows != records:
        raise RuntimeError(f"Spark read {table.num_rows} rows, expected {records}")
    return records / elapsed


def reader_alone(bootstrap: str, records: int) -> float:
    """The data source's reader without Spark: the Arrow batches it would hand over."""
    from headrace.spark_bridge._options import parse_options
    from headrace.spark_bridge._source import BatchReader

    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": TOPIC}
    reader = BatchReader(parse_options(options, streaming=False))
    started = time.perf_counter()
    rows = sum(b.num_rows for p in reader.partitions() for b in reader.read(p))
    elapsed = time.perf_counter() - started
    if rows != records:
        raise RuntimeError(f"the reader read {rows} rows, expected {records}")
    return records / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--driver-memory", default="2g", help="Spark's driver heap (8g for 10M records)"
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="profile and time each task of the Spark read in its worker (see above)",
    )
    args = parser.parse_args()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
        for stale in [*args.profile.glob("task-*.prof"), args.profile / "spans.jsonl"]:
            stale.unlink(missing_ok=True)
        os.environ[PROFILE_ENV] = str(args.profile.resolve())
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from spark_jars import spark_kafka_jars

    from headrace.spark_bridge import spark_session

    with broker(args.partitions) as bootstrap:
        produce(bootstrap, args.records, args.size, args.partitions)
        # 2 GiB by default: a 1,000,000-row toArrow() result twice in a 1 GiB driver ran
        # out of heap under load, whichever source read it. No cap on the collected
        # result's size (1 GiB by default; a 10M-row read is about 1.5 GiB).
        conf = {
            "spark.jars": spark_kafka_jars(),
            "spark.driver.memory": args.driver_memory,
            "spark.driver.maxResultSize": "0",
        }
        spark = spark_session("bench-read", conf=conf)
        spark.sparkContext.setLogLevel("ERROR")
        ours = "headrace"
        if args.profile:
            spark.dataSource.register(profiled_source())
            ours = "headrace_profiled"
        try:
            for fmt in (ours, "kafka"):  # both warm up before the clock
                (
                    spark.read.format(fmt)
                    .option("kafka.bootstrap.servers", bootstrap)
                    .option("subscribe", TOPIC)
                    .load()
                    .limit(1)
                    .collect()
                )
            ratios, cpu_ratios, theirs, tuned = [], [], [], []
            n = args.records
            readers = {
                "raw": (lambda: raw_consume(bootstrap, n, args.partitions), False),
                "headrace": (lambda: spark_read(spark, bootstrap, n, ours), True),
                "alone": (lambda: reader_alone(bootstrap, n), False),
                "kafka": (lambda: spark_read(spark, bootstrap, n, "kafka"), True),
                "tuned": (
                    lambda: spark_read(spark, bootstrap, n, "kafka", SPARK_KAFKA_TUNED),
                    True,
                ),
            }
            for i in range(args.repeat):
                # Every other run in reverse order, so neither side always goes first
                # into whatever the shared machine is doing.
                order = list(readers) if i % 2 == 0 else list(reversed(readers))
                got: dict[str, tuple[float, float, float]] = {}
                for name in order:
                    run, spark_tree = readers[name]
                    rate, cpu = timed(run, spark_tree)
                    got[name] = (rate, cpu, os.getloadavg()[0])
                (raw, raw_cpu, raw_load), (read, read_cpu, read_load) = got["raw"], got["headrace"]
                alone, alone_cpu, alone_load = got["alone"]
                kafka, kafka_cpu, kafka_load = got["kafka"]
                kafka_tuned, tuned_cpu, tuned_load = got["tuned"]
                theirs.append(read / kafka)
                tuned.append(read / kafka_tuned)
                ratios.append(read / raw)
                cpu_ratios.append(raw_cpu / read_cpu)
                print(
                    f"run {i + 1}: raw librdkafka {raw:>10,.0f} rec/s (load {raw_load:.1f}),"
                    f" Spark read {read:>10,.0f} rec/s (load {read_load:.1f}, {read / raw:.2f}"
                    f" of raw), its reader alone {alone:>10,.0f} rec/s (load {alone_load:.1f},"
                    f" {alone / raw:.2f}); by CPU seconds: Spark {raw_cpu / read_cpu:.2f},"
                    f" reader alone {raw_cpu / alone_cpu:.2f} (raw {raw_cpu:.2f} s, Spark"
                    f" {read_cpu:.2f} s, reader {alone_cpu:.2f} s)",
                    flush=True,
                )
                print(
                    f"       Spark's Kafka source {kafka:>10,.0f} rec/s ({kafka_cpu:.2f} s CPU,"
                    f" load {kafka_load:.1f}), tuned {kafka_tuned:>10,.0f} rec/s"
                    f" ({tuned_cpu:.2f} s CPU, load {tuned_load:.1f}); headrace"
                    f" {read / kafka:.2f}x and {read / kafka_tuned:.2f}x of them by rate,"
                    f" {kafka_cpu / read_cpu:.2f}x and {tuned_cpu / read_cpu:.2f}x by CPU",
                    flush=True,
                )
        finally:
            spark.stop()
    if args.profile:
        print_profile(args.profile)
    print(
        f"Spark read at {statistics.median(ratios):.2f} of raw librdkafka by rate, "
        f"{statistics.median(cpu_ratios):.2f} by CPU per record (medians; goal 0.7); "
        f"{statistics.median(theirs):.2f}x Spark's Kafka source at its defaults, "
        f"{statistics.median(tuned):.2f}x tuned (medians, by rate)"
    )


if __name__ == "__main__":
    main()
