"""Topics that are tables: what producing to one costs, how fresh its table is, how fast
the writer writes, against the export job on the same data.

    .venv/bin/python benchmarks/table_topics.py [--records 200000] [--size 100]
        [--partitions 3] [--runs 3] [--fresh-seconds 30] [--fresh-rate 500]
        [--fresh-intervals 1000,5000] [--writer broker|process]

One built-in broker subprocess with ``--table-location`` (the table writer runs in a
child process of the broker command, as users run it), fsync on (the default: every
acknowledged produce is on disk), the same for every run. With ``--writer process``
the broker has no table location and the writer (``TableWriter``, a Kafka client) runs
in a process the benchmark starts instead, as a check on the first. In order:

1. throughput, ``--runs`` rounds of three runs, each on a fresh topic of
   ``--partitions`` and each kind first, second and third in turn: a plain topic; a
   plain topic read as it is written by a librdkafka consumer in a process of its own
   (read_committed, from the beginning: what the writer does, outside the broker); a
   table topic (``key_value``, the default 5 s commit interval). First one record, and
   the reader or the writer has it, so it follows the topic before the clock; then
   ``--records`` records of ``--size`` bytes from one librdkafka producer
   (acks=all, idempotent), timed to the last acknowledgement. For the table topic the
   clock runs on until the table holds every row: its records / that time is the rate
   the writer wrote at while keeping up. The broker process's CPU seconds and the
   writer's are read from /proc for each run;
2. freshness, for each commit interval of ``--fresh-intervals``: a table topic gets
   ``--fresh-rate`` records a second for ``--fresh-seconds``, each stamped with the
   time it was produced (CreateTime); a reader polls the table's version every 50 ms
   and, on a new one, notes when each new row became visible. Freshness is visible
   minus produced, p50 and p99 over all rows;
3. catch-up against the export, on the same records: the last plain topic of step 1
   is made a table topic (IncrementalAlterConfigs, commit interval 1 s), and its writer
   copies it from the beginning: rows / s from the alter to the last row visible (the
   writer's discovery, up to 2 s, included); then ``spark_bridge.export_topic`` (the
   ``headrace spark export`` job) copies the same topic into a fresh local table.

Printed: each run, the median of the per-pair throughput ratios (table / plain; the
issue's goal is at least 0.9), freshness, and the writer's catch-up rate against the
export's, with the 1-minute load average before and after each step.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from brokerproc import BrokerProcess

TICKS = os.sysconf("SC_CLK_TCK")
POLL_S = 0.05
CATCH_UP_INTERVAL_MS = 1000
DISCOVERY_S = 2.0  # how often the writer looks for new table topics


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, its threads included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def create_topic(bootstrap: str, topic: str, partitions: int, table_ms: int | None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    config = (
        {}
        if table_ms is None
        else {
            "headrace.table.mode": "key_value",
            "headrace.table.commit.interval.ms": str(table_ms),
        }
    )
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, config=config)])[topic].result(30)


def producer(bootstrap: str) -> Any:
    from confluent_kafka import Producer

    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 1_000_000,
            "log_level": 4,  # warnings: not its notice of events purged at close
        }
    )


def produce(bootstrap: str, topic: str, records: int, size: int, partitions: int) -> float:
    """Seconds from the first send to the last acknowledgement."""
    out = producer(bootstrap)
    value = b"v" * size
    began = time.perf_counter()
    for i in range(records):
        while True:
            try:
                out.produce(topic, value=value, key=b"%d" % i, partition=i % partitions)
                break
            except BufferError:
                out.poll(0.01)
        if i % 10_000 == 0:
            out.poll(0)
    assert out.flush(120) == 0, "records left unacknowledged"
    return time.perf_counter() - began


def table_rows(path: Path) -> int:
    import deltalake

    try:
        table = deltalake.DeltaTable(str(path))
    except deltalake.exceptions.TableNotFoundError:
        return 0
    return sum(
        int(n) for n in table.get_add_actions(flatten=True).column("num_records").to_pylist()
    )


def wait_rows(path: Path, rows: int, timeout: float = 600.0) -> float:
    """Waits until the table at ``path`` holds ``rows``; returns perf_counter then."""
    deadline = time.monotonic() + timeout
    while True:
        seen = table_rows(path)
        if seen >= rows:
            assert seen == rows, f"{path}: {seen} rows, more than the {rows} produced"
            return time.perf_counter()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path}: {seen} of {rows} rows after {timeout}s")
        time.sleep(POLL_S)


# A librdkafka consumer in a process of its own, reading a topic as the writer does
# (read_committed, from the beginning) until it has COUNT records: "ready" once it has
# the first, "done" at the end.
READER = """
import sys
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
bootstrap, topic, partitions, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-reader",
                     "enable.auto.commit": False, "isolation.level": "read_committed"})
consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
seen = 0
while seen < count:
    for message in consumer.consume(10000, 0.5):
        assert not message.error(), message.error()
        seen += 1
        if seen == 1:
            print("ready", flush=True)
consumer.close()
print("done", flush=True)
"""


def start_reader(bootstrap: str, topic: str, partitions: int, count: int) -> subprocess.Popen[str]:
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, bootstrap, topic, str(partitions), str(count)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
    return reader


# The table writer as a Kafka client of its own (``TableWriter`` is one): SIGTERM stops it.
WRITER = """
import signal, sys
from headrace.table_topics import TableWriter
writer = TableWriter(sys.argv[1], sys.argv[2])
signal.signal(signal.SIGTERM, lambda *_: writer.stop())
writer.run()
"""


@contextmanager
def writer_process(broker: BrokerProcess, lake: Path, args: argparse.Namespace) -> Iterator[None]:
    """With ``--writer process``, the writer in a child process for the whole run."""
    if args.writer != "process":
        yield
        return
    child = subprocess.Popen([sys.executable, "-c", WRITER, broker.bootstrap, str(lake)])
    WRITER_PIDS.append(child.pid)
    try:
        yield
    finally:
        child.send_signal(signal.SIGTERM)
        child.wait(60)


WRITER_PIDS: list[int] = []


def child_pids(parent: int) -> list[int]:
    """The processes whose parent is ``parent`` (the broker's: its table writer)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
        except OSError:  # it ended while looked at
            continue
        if stat and int(stat.rsplit(")", 1)[1].split()[1]) == parent:
            found.append(int(entry.name))
    return found


def throughput_run(
    broker: BrokerProcess, lake: Path, topic: str, kind: str, args: argparse.Namespace
) -> dict[str, float]:
    """One run of step 1; ``kind`` is plain, read (a plain topic with a reader in a
    process of its own) or table."""
    table = kind == "table"
    create_topic(broker.bootstrap, topic, args.partitions, 5000 if table else None)
    # one record first: the topic's leader is known, and its reader follows the topic
    produce(broker.bootstrap, topic, 1, args.size, args.partitions)
    reader = None
    if table:
        wait_rows(lake / topic, 1, timeout=60)
    elif kind == "read":
        reader = start_reader(broker.bootstrap, topic, args.partitions, args.records + 1)
    assert broker.proc is not None
    writers = WRITER_PIDS or child_pids(broker.proc.pid)  # the writer beside the broker
    writer_cpu0 = sum(cpu_seconds(pid) for pid in writers)
    cpu0, began = cpu_seconds(broker.proc.pid), time.perf_counter()
    seconds = produce(broker.bootstrap, topic, args.records, args.size, args.partitions)
    cpu = cpu_seconds(broker.proc.pid) - cpu0
    run = {"produce_rate": args.records / seconds, "broker_cpu": cpu}
    if writers:
        run["writer_cpu"] = sum(cpu_seconds(pid) for pid in writers) - writer_cpu0
    if table:
        done = wait_rows(lake / topic, args.records + 1)
        run["written_rate"] = args.records / (done - began)
        run["behind_s"] = done - began - seconds
    if reader is not None:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "done"
        reader.wait(60)
        run["read_rate"] = args.records / (time.perf_counter() - began)
    return run


def freshness(
    broker: BrokerProcess, lake: Path, interval_ms: int, args: argparse.Namespace
) -> list[float]:
    """Seconds from each record's produce to its row being visible in the table."""
    import deltalake

    topic = f"fresh-{interval_ms}-{os.getpid()}"
    create_topic(broker.bootstrap, topic, args.partitions, interval_ms)
    total = int(args.fresh_rate * args.fresh_seconds)
    seen_at: dict[tuple[int, int], float] = {}
    produced_at: dict[tuple[int, int], float] = {}
    stop = threading.Event()

    def watch() -> None:
        version = -1
        while not stop.is_set() or len(seen_at) < total:
            try:
                table = deltalake.DeltaTable(str(lake / topic))
            except deltalake.exceptions.TableNotFoundError:
                time.sleep(POLL_S)
                continue
            if table.version() != version:
                now = time.time()
                version = table.version()
                rows = table.to_pyarrow_table(columns=["partition", "offset"])
                for key in zip(
                    rows["partition"].to_pylist(), rows["offset"].to_pylist(), strict=True
                ):
                    seen_at.setdefault(key, now)
            time.sleep(POLL_S)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out = producer(broker.bootstrap)

    def acked(sent: float) -> Any:
        def report(error: Any, message: Any) -> None:
            assert error is None, error
            produced_at[(message.partition(), message.offset())] = sent

        return report

    began = time.time()
    for i in range(total):
        due = began + i / args.fresh_rate
        pause = due - time.time()
        if pause > 0:
            time.sleep(pause)
        sent = time.time()
        out.produce(
            topic,
            value=b"v" * args.size,
            partition=i % args.partitions,
            timestamp=int(sent * 1000),
            on_delivery=acked(sent),
        )
        out.poll(0)
    assert out.flush(60) == 0
    stop.set()
    watcher.join(120 + interval_ms / 1000)
    assert len(seen_at) >= total, f"only {len(seen_at)} of {total} rows became visible"
    return [seen_at[key] - sent for key, sent in produced_at.items()]


def make_table(bootstrap: str, topic: str, interval_ms: int) -> None:
    """Turn an existing topic into a table topic, as ``configs alter`` does."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    entries = [
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in (
            ("headrace.table.mode", "key_value"),
            ("headrace.table.commit.interval.ms", str(interval_ms)),
        )
    ]
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3, help="rounds of plain, read, table")
    parser.add_argument("--fresh-seconds", type=float, default=30.0)
    parser.add_argument("--fresh-rate", type=float, default=500.0, help="records a second")
    parser.add_argument("--fresh-intervals", default="1000,5000", help="commit intervals, ms")
    parser.add_argument(
        "--writer",
        choices=("broker", "process"),
        default="broker",
        help="the table writer beside the broker, a child of its command (--table-location, as"
        " users run it)"
        " or in a process of its own beside a broker without it",
    )
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="headrace-bench-tables-"))
    where = (
        "a child process of the broker command"
        if args.writer == "broker"
        else "a process the benchmark starts"
    )
    lake = root / "lake"
    print(
        f"{args.records:,} records of {args.size} B, {args.partitions} partitions,"
        f" fsync on, acks=all, the writer in {where}; load {load()}",
        flush=True,
    )
    beside = ("--table-location", str(lake)) if args.writer == "broker" else ()
    try:
        measure(root, lake, beside, where, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)  # a run leaves about 200 MB


def measure(
    root: Path, lake: Path, beside: tuple[str, ...], where: str, args: argparse.Namespace
) -> None:
    from headrace.spark_bridge import export_topic

    with BrokerProcess(root / "data", *beside) as broker, writer_process(broker, lake, args):
        ratios: list[float] = []
        table_runs: list[dict[str, float]] = []
        last_plain = ""
        read_ratios: list[float] = []
        kinds = ("plain", "read", "table")
        for pair in range(args.runs):
            results: dict[str, dict[str, float]] = {}
            # each kind goes first, second and third in turn
            order = kinds[pair % 3 :] + kinds[: pair % 3]
            for kind in order:
                topic = f"{kind}-{pair}"
                before = load()
                run = throughput_run(broker, lake, topic, kind, args)
                results[kind] = run
                described = ", ".join(f"{k} {v:,.2f}" for k, v in run.items())
                print(
                    f"  round {pair + 1} {kind:5}: {described}  (load {before} -> {load()})",
                    flush=True,
                )
                if kind == "table":
                    table_runs.append(run)
                elif kind == "plain":
                    last_plain = topic
            plain = results["plain"]["produce_rate"]
            ratios.append(results["table"]["produce_rate"] / plain)
            read_ratios.append(results["read"]["produce_rate"] / plain)
        for what, values in (
            (f"a table topic (its writer in {where})", ratios),
            ("a plain topic read by a consumer in a process of its own", read_ratios),
        ):
            print(
                f"produce to {what} / to a plain topic: median {statistics.median(values):.3f}"
                f" (rounds {', '.join(f'{r:.3f}' for r in values)})",
                flush=True,
            )
        behind = statistics.median(run["behind_s"] for run in table_runs)
        print(
            f"the writer kept up at {statistics.median(r['written_rate'] for r in table_runs):,.0f}"
            f" rows/s (produce start to all rows visible); its table was whole {behind:.2f} s"
            " after the last acknowledgement (median)",
            flush=True,
        )

        for interval in (int(x) for x in args.fresh_intervals.split(",")):
            before = load()
            ages = freshness(broker, lake, interval, args)
            print(
                f"freshness at commit.interval.ms={interval}: p50 {percentile(ages, 0.5):.3f} s,"
                f" p99 {percentile(ages, 0.99):.3f} s, max {max(ages):.3f} s"
                f" over {len(ages):,} rows at {args.fresh_rate:g}/s  (load {before} -> {load()})",
                flush=True,
            )

        # The same records both ways: a plain topic of step 1 becomes a table topic (its
        # writer starts at the beginning), then the export job copies it.
        rows = args.records + 1
        before = load()
        began = time.perf_counter()
        make_table(broker.bootstrap, last_plain, CATCH_UP_INTERVAL_MS)
        catch_up = wait_rows(lake / last_plain, rows) - began
        print(
            f"catch-up of {last_plain} made a table topic: {rows:,} rows in {catch_up:.2f} s,"
            f" {rows / catch_up:,.0f} rows/s (the writer's discovery, up to"
            f" {DISCOVERY_S:g} s, included)  (load {before} -> {load()})",
            flush=True,
        )
        before = load()
        result = export_topic(
            broker.bootstrap, last_plain, str(root / "export"), commit_records=500_000
        )
        assert result.records == rows, result.records
        rate = result.records / result.seconds
        print(
            f"export of {last_plain}: {result.records:,} rows in {result.seconds:.2f} s,"
            f" {rate:,.0f} rows/s; writer's catch-up / export {rows / catch_up / rate:.2f}"
            f"  (load {before} -> {load()})",
            flush=True,
        )


if __name__ == "__main__":
    main()
