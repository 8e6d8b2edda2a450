"""headrace's built-in broker against Apache Kafka 4.4 (one KRaft node), measured by Kafka's
own perf tools: ProducerPerformance (kafka-producer-perf-test), ConsumerPerformance
(kafka-consumer-perf-test) and EndToEndLatency (kafka-e2e-latency).

    .venv/bin/python benchmarks/broker_vs_apache_kafka.py [--durabilities default equal]
        [--sizes 100 1024] [--partitions 1 100 1000] [--runs 3] [--megabytes 50]
        [--e2e-records 1000] [--json results.json]

For each durability both brokers are started fresh (the time to ready and, at the end, the
peak RSS of each broker process are taken), then for each record size and partition count:

1. a topic per broker; ``--runs`` rounds, the brokers alternating which goes first round by
   round: ProducerPerformance unthrottled (acks=all, ``--megabytes`` of records), then
   ConsumerPerformance reading those records back with a new group;
2. Kafka's median producer rate is its maximum here; ``--runs`` rounds, alternating, of
   ProducerPerformance paced at half of it (``--throughput``) and, while it runs,
   EndToEndLatency's round trips (produce one record, acks=all, then consume it) on a
   one-partition topic of the same broker.

Durabilities: ``equal`` fsyncs every acknowledged record on both (headrace ``--fsync
always``, which batches the fsyncs of concurrent produces into one group commit; Kafka
``log.flush.interval.messages=1``, a flush per appended batch, per partition); ``default``
is each one's default for throughput (headrace ``--fsync never``; Kafka's, which never
fsyncs on produce and leaves it to the page cache).

Every figure goes out with the load averages (as ``uptime`` shows them) taken when it was
measured: the machine is shared. The tool JVMs run with full JIT (C2); the Kafka broker too,
with G1 as its own start script does (the test launcher's C1-only, serial-GC JVM is meant for
short tests, not for speed).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from apache_kafka import KafkaCluster, KafkaNode
from brokerproc import BrokerProcess

from jvm import KAFKA_SERVER, QUIET_LOGGING, TOPIC_COMMAND, java_command, kafka_tool

PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERF = "org.apache.kafka.tools.ConsumerPerformance"
END_TO_END_LATENCY = "org.apache.kafka.tools.EndToEndLatency"

FULL_JIT = ("-XX:TieredStopAtLevel=4",)
"""Given after java_command's ``-XX:TieredStopAtLevel=1``, the last one wins: C2 as well."""

KAFKA_JVM = (*FULL_JIT, "-XX:-UseSerialGC", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20")
"""The GC of Kafka's kafka-run-class.sh in place of the test launcher's serial one."""

DURABILITY = {
    # durability: (headrace's broker options, Kafka's broker settings)
    "equal": (("--fsync", "always"), {"log.flush.interval.messages": "1"}),
    "default": (("--fsync", "never"), {}),
}


def load() -> str:
    """The load averages over 1, 5 and 15 minutes, as ``uptime`` shows them."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def peak_rss_mb(pid: int) -> float:
    """The peak resident set (VmHWM) of ``pid`` and of its children, in MiB."""
    pids = [pid]
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            pids += [int(c) for c in (task / "children").read_text().split()]
    total_kb = 0
    for p in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total_kb += int(line.split()[1])
    return total_kb / 1024


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time ``pid`` has used so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def answers_metadata(bootstrap: str) -> bool:
    """Whether the broker answers a Metadata request listing a broker: ready for clients."""
    from kio.schema.metadata.v12.request import MetadataRequest
    from rawkafka import RawClient

    try:
        with RawClient(bootstrap, timeout=2) as client:
            answer = client.request(
                3,
                12,
                MetadataRequest(
                    topics=(),
                    allow_auto_topic_creation=False,
                    include_topic_authorized_operations=False,
                ),
            )
    except (OSError, ConnectionError):
        return False
    return bool(answer.brokers)


@dataclass
class Broker:
    name: str
    bootstrap: str
    pid: int
    ready_s: float


class _TunedKafkaNode(KafkaNode):
    """The test launcher's node, started with the JVM settings of Kafka's own scripts."""

    def start(self) -> None:
        assert self.proc is None or self.proc.poll() is not None, "node already running"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                java_command(
                    KAFKA_SERVER,
                    str(self.config_path),
                    heap="1g",
                    jvm_options=("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", *KAFKA_JVM),
                ),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.data_dir,
            )
        self.started_at = time.monotonic()


@contextlib.contextmanager
def apache_kafka(durability: str, root: Path) -> Iterator[Broker]:
    cluster = KafkaCluster(root / "kafka", size=1, config=DURABILITY[durability][1])
    cluster.nodes = [_TunedKafkaNode(1, root / "kafka" / "node-1")]
    try:
        cluster.start()
        node = cluster.nodes[0]
        assert isinstance(node, _TunedKafkaNode) and node.proc is not None
        yield Broker("kafka", node.bootstrap, node.proc.pid, time.monotonic() - node.started_at)
    finally:
        cluster.stop(grace=0)


@contextlib.contextmanager
def headrace(durability: str, root: Path) -> Iterator[Broker]:
    broker = BrokerProcess(root / "headrace" / "data", *DURABILITY[durability][0])
    (root / "headrace").mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    broker.start(timeout=60)
    while not answers_metadata(broker.bootstrap):
        time.sleep(0.02)
    assert broker.proc is not None
    try:
        yield Broker("headrace", broker.bootstrap, broker.proc.pid, time.monotonic() - started)
    finally:
        broker.kill()


def perf_tool(main_class: str, *args: str, timeout: float = 600) -> str:
    """One of Kafka's perf tools to its end (full JIT, 1 GiB heap); its standard output."""
    done = subprocess.run(
        java_command(main_class, *args, heap="1g", jvm_options=(*QUIET_LOGGING, *FULL_JIT)),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, (
        f"{main_class} {' '.join(args)} exited {done.returncode}:\n"
        f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


def create_topic(broker: Broker, topic: str, partitions: int) -> None:
    kafka_tool(
        TOPIC_COMMAND,
        broker.bootstrap,
        "--create",
        "--topic",
        topic,
        "--partitions",
        str(partitions),
        "--replication-factor",
        "1",
        timeout=300,
    )


_PRODUCED = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th"
)


def produce(
    broker: Broker, topic: str, records: int, size: int, rate: float = -1
) -> dict[str, Any]:
    """ProducerPerformance's summary: records/s, MB/s and latency percentiles (ms)."""
    out = perf_tool(
        PRODUCER_PERF,
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic,
        "--num-records",
        str(records),
        "--record-size",
        str(size),
        "--throughput",
        str(int(rate)),
        "--command-property",
        "acks=all",
    )
    found = _PRODUCED.findall(out)
    assert found, f"no summary in ProducerPerformance's output:\n{out[-2000:]}"
    sent, rec_s, mb_s, _avg, _max, p50, _p95, p99 = found[-1]
    assert int(sent) == records, f"sent {sent} of {records}"
    return {"rec_s": float(rec_s), "mb_s": float(mb_s), "p50_ms": float(p50), "p99_ms": float(p99)}


def consume(broker: Broker, topic: str, records: int, group: str) -> dict[str, Any]:
    """ConsumerPerformance's summary: records/s over the whole run (group join included) and
    over its fetching only, and the join's time."""
    out = perf_tool(
        CONSUMER_PERF,
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic,
        "--num-records",
        str(records),
        "--group",
        group,
        "--timeout",
        "60000",
    )
    lines = [line for line in out.splitlines() if "," in line]
    header = next(i for i, line in enumerate(lines) if line.startswith("start.time"))
    row = dict(
        zip(
            (h.strip() for h in lines[header].split(",")),
            (v.strip() for v in lines[header + 1].split(",")),
            strict=True,
        )
    )
    assert int(row["data.consumed.in.nMsg"]) >= records, row
    return {
        "rec_s": float(row["nMsg.sec"]),
        "fetch_rec_s": float(row["fetch.nMsg.sec"]),
        "rebalance_ms": float(row["rebalance.time.ms"]),
    }


_E2E = re.compile(r"50th = ([\d.]+), 99th = ([\d.]+)")


def end_to_end(broker: Broker, topic: str, records: int, size: int) -> dict[str, Any]:
    """EndToEndLatency's p50 and p99 (ms, whole milliseconds as the tool truncates them)."""
    out = perf_tool(END_TO_END_LATENCY, broker.bootstrap, topic, str(records), "all", str(size))
    found = _E2E.search(out)
    assert found, f"no percentiles in EndToEndLatency's output:\n{out[-2000:]}"
    return {"e2e_p50_ms": float(found[1]), "e2e_p99_ms": float(found[2])}


def under_load(
    broker: Broker, topic: str, e2e_topic: str, rate: float, seconds: float, size: int, e2e: int
) -> dict[str, Any]:
    """Round trips measured while ProducerPerformance sends at ``rate`` for ``seconds``."""
    with tempfile.TemporaryFile("w+") as out:
        paced = subprocess.Popen(
            java_command(
                PRODUCER_PERF,
                "--bootstrap-server",
                broker.bootstrap,
                "--topic",
                topic,
                "--num-records",
                str(int(rate * seconds)),
                "--record-size",
                str(size),
                "--throughput",
                str(int(rate)),
                "--command-property",
                "acks=all",
                heap="1g",
                jvm_options=(*QUIET_LOGGING, *FULL_JIT),
            ),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            time.sleep(3)  # the producer's JVM up and sending
            started = time.monotonic()
            latency: dict[str, Any] = end_to_end(broker, e2e_topic, e2e, size)
            latency["e2e_s"] = time.monotonic() - started
            paced.wait(seconds + 120)
        finally:
            if paced.poll() is None:
                paced.kill()
                paced.wait()
        out.seek(0)
        text = out.read()
    found = _PRODUCED.findall(text)
    assert found, f"no summary from the paced producer:\n{text[-2000:]}"
    latency |= {
        "paced_rec_s": float(found[-1][1]),
        "paced_p99_ms": float(found[-1][7]),
        "load": load(),
    }
    # the round trips must have run inside the paced window to count as "under load"
    latency["e2e_inside_load"] = latency["e2e_s"] + 3 <= seconds
    return latency


@dataclass
class Cell:
    """One durability, record size and partition count: every peer's runs."""

    durability: str
    size: int
    partitions: int
    produced: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    consumed: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    latency: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    loads: list[str] = field(default_factory=list)
    error: str = ""


def alternating(brokers: Sequence[Broker], round_no: int) -> list[Broker]:
    return list(brokers) if round_no % 2 == 0 else list(reversed(brokers))


def measure_cell(brokers: Sequence[Broker], cell: Cell, args: argparse.Namespace) -> None:
    records = max(1000, args.megabytes * 1_000_000 // cell.size)
    topic = f"perf-{cell.size}-{cell.partitions}"
    e2e_topic = f"e2e-{cell.size}-{cell.partitions}"
    for broker in brokers:
        create_topic(broker, topic, cell.partitions)
        create_topic(broker, e2e_topic, 1)
    for round_no in range(args.runs):
        for broker in alternating(brokers, round_no):
            cell.loads.append(load())
            # the broker's CPU per record: what it costs whatever share of the shared
            # machine's cores it was given
            before = cpu_seconds(broker.pid)
            p = produce(broker, topic, records, cell.size)
            after = cpu_seconds(broker.pid)
            p["cpu_us"] = (after - before) * 1e6 / records
            p["load"] = load()
            c = consume(broker, topic, records, f"g-{round_no}")
            c["cpu_us"] = (cpu_seconds(broker.pid) - after) * 1e6 / records
            c["load"] = load()
            cell.produced.setdefault(broker.name, []).append(p)
            cell.consumed.setdefault(broker.name, []).append(c)
            print(f"  {broker.name:8} round {round_no}: produce {p} consume {c}", flush=True)
    kafka_max = statistics.median(p["rec_s"] for p in cell.produced["kafka"])
    rate = kafka_max / 2
    for round_no in range(args.e2e_runs):
        for broker in alternating(brokers, round_no):
            lat = under_load(
                broker, topic, e2e_topic, rate, args.paced_seconds, cell.size, args.e2e_records
            )
            cell.latency.setdefault(broker.name, []).append(lat | {"rate": rate})
            print(f"  {broker.name:8} round {round_no}: at {rate:.0f} rec/s {lat}", flush=True)


def median(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(float(r[key]) for r in rows)


def _first(loads: str) -> float:
    return float(loads.split()[0])


def report(cells: list[Cell], brokers_seen: dict[str, dict[str, Any]]) -> None:
    columns = [
        ("prod rec/s", "produced", "rec_s", "{:,.0f}"),
        ("prod MB/s", "produced", "mb_s", "{:.1f}"),
        ("prod p99 ms", "produced", "p99_ms", "{:.0f}"),
        ("prod broker CPU us/rec", "produced", "cpu_us", "{:.1f}"),
        ("cons rec/s", "consumed", "rec_s", "{:,.0f}"),
        ("cons fetch rec/s", "consumed", "fetch_rec_s", "{:,.0f}"),
        ("cons broker CPU us/rec", "consumed", "cpu_us", "{:.1f}"),
        ("p99 ms @half", "latency", "paced_p99_ms", "{:.0f}"),
        ("e2e p50 ms", "latency", "e2e_p50_ms", "{:.0f}"),
        ("e2e p99 ms", "latency", "e2e_p99_ms", "{:.0f}"),
    ]
    print("\nmedians; ratio = headrace / Kafka (for latencies lower is better)")
    head = "| durability | size | parts | figure | headrace | Kafka | ratio | load (1/5/15 min) |"
    print(head)
    print("|" + "---|" * head.count(" | ") + "---|")
    for cell in cells:
        for label, kind, key, spec in columns:
            runs = getattr(cell, kind)
            if "headrace" not in runs or "kafka" not in runs or key not in runs["kafka"][0]:
                continue
            ours, theirs = median(runs["headrace"], key), median(runs["kafka"], key)
            ratio = f"{ours / theirs:.2f}" if theirs else "-"
            loads = [r["load"] for r in runs["headrace"] + runs["kafka"]]
            print(
                f"| {cell.durability} | {cell.size} | {cell.partitions} | {label} "
                f"| {spec.format(ours)} | {spec.format(theirs)} | {ratio} "
                f"| {min(loads, key=_first)} .. {max(loads, key=_first)} |"
            )
    print("\nbrokers: time to ready (s) and peak RSS (MiB), per durability")
    for key, seen in brokers_seen.items():
        print(f"  {key}: {seen}")


def save(path: Path | None, cells: list[Cell], brokers_seen: dict[str, Any]) -> None:
    """Every run's figures so far, so that a long run stopped early still leaves them."""
    if path:
        path.write_text(
            json.dumps({"cells": [vars(c) for c in cells], "brokers": brokers_seen}, indent=1)
        )


def run_from_commit(commit: str, root: Path) -> str:
    """Make the ``headrace`` that brokers start from here the one of ``commit``, not the
    working tree (where edits in progress would enter the measurement); returns the full
    commit id.

    The commit's files are unpacked under ``root`` and laid out as installed (each folder of
    pyproject's package-dir moved to its sub-package's place); the brokers start with that
    on PYTHONPATH and with ``root`` as working directory, so neither the editable install's
    finder nor the repository's own ``headrace/`` folder is reached first.
    """
    import tomllib

    repo = Path(__file__).resolve().parent.parent
    full = subprocess.run(
        ["git", "rev-parse", commit], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    source = root / "source"
    source.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", full], cwd=repo, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    layout = tomllib.loads((source / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    installed = root / "installed"
    for package, folder in sorted(layout.items()):  # parents before their sub-packages
        shutil.copytree(source / folder, installed / package.replace(".", "/"))
    os.environ["PYTHONPATH"] = str(installed)
    os.chdir(installed)
    return full


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--durabilities", nargs="+", default=["default", "equal"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1024])
    parser.add_argument("--partitions", type=int, nargs="+", default=[1, 100, 1000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--e2e-runs", type=int, default=3)
    parser.add_argument("--megabytes", type=int, default=50, help="produced per run")
    parser.add_argument("--e2e-records", type=int, default=1000)
    parser.add_argument("--paced-seconds", type=float, default=20)
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    parser.add_argument(
        "--headrace-at", metavar="COMMIT", help="run headrace's broker as of this commit"
    )
    parser.add_argument(
        "--report", type=Path, nargs="+", metavar="JSON", help="only print these runs' table"
    )
    args = parser.parse_args()
    cells: list[Cell] = []
    brokers_seen: dict[str, dict[str, Any]] = {}
    if args.report:
        for saved in map(json.loads, (path.read_text() for path in args.report)):
            cells += [Cell(**c) for c in saved["cells"]]
            brokers_seen |= saved["brokers"]
        report(cells, brokers_seen)
        return
    if args.json:
        args.json = args.json.resolve()
    if args.headrace_at:
        unpacked = Path(tempfile.mkdtemp(prefix="headrace-at-"))
        atexit.register(shutil.rmtree, unpacked, ignore_errors=True)
        commit = run_from_commit(args.headrace_at, unpacked)
        print(f"headrace's broker as of {commit}", flush=True)
    print(f"load average at start {load()} on {os.cpu_count()} cores", flush=True)
    for durability in args.durabilities:
        root = Path(tempfile.mkdtemp(prefix=f"vs-kafka-{durability}-"))
        try:
            with apache_kafka(durability, root) as kafka, headrace(durability, root) as ours:
                brokers = [ours, kafka]
                for size in args.sizes:
                    for partitions in args.partitions:
                        cell = Cell(durability, size, partitions)
                        print(f"{durability} {size} B {partitions} partitions", flush=True)
                        cells.append(cell)
                        try:
                            measure_cell(brokers, cell, args)
                        except (AssertionError, subprocess.SubprocessError) as failed:
                            # one cell failing (a tool's timeout, say) leaves the others
                            cell.error = str(failed)[-1500:]
                            print(f"  failed: {cell.error}", flush=True)
                        save(args.json, cells, brokers_seen)
                for b in brokers:
                    brokers_seen[f"{durability} {b.name}"] = {
                        "ready_s": round(b.ready_s, 2),
                        "peak_rss_mb": round(peak_rss_mb(b.pid), 1),
                    }
        finally:
            shutil.rmtree(root, ignore_errors=True)
        save(args.json, cells, brokers_seen)
    report(cells, brokers_seen)
    print(f"load average at end {load()}")


if __name__ == "__main__":
    main()
