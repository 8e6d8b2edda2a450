"""headrace against Kafka Streams 4.4: the same four topologies, one stream thread each,
on the same broker and the same input, the two run one after the other, alternating.

Topologies (JSON page views keyed by user, ``{"user", "page", "amount", "seq", "sent"}``,
1,000 users; the Kafka Streams side is ``benchmarks/java/KsBench.java``):

- ``stateless``: keep ``amount >= 50`` (half), map to ``{"user", "page", "amount_cents",
  "seq", "sent"}``;
- ``count``: ``group_by_key().count()``, the count as a decimal string;
- ``windowed``: 10 s tumbling windows, no grace, a count, one final result per window
  (``suppress(until_window_closes)`` on both sides), ``"user@start" -> count``;
- ``join``: the stream joined with a table of the users (``user -> "tier-N"``), the tier
  added to the value as its last field (the same string operation on both sides).

Brokers: headrace's built-in broker (``headrace broker``, a subprocess, ``--fsync
never``) and Apache Kafka 4.4 (one KRaft node, ``tests/apache_kafka.py``): neither
fsyncs before acknowledging a produce (Kafka's default ``flush.messages``), both leave
it to the page cache. The input (``--records``, plus one closing record per partition
whose timestamp closes every window; ``--warmup-records`` more for Kafka Streams' JIT
warm-up, and the users' table) is produced once per broker in 8 partitions.

Each run: one application process with its own group and output topic. headrace is one
``App`` (one process, one event loop); Kafka Streams one ``KafkaStreams`` with
``num.stream.threads=1`` in a JVM at its defaults (no flags but the classpath). Both
commit every ``--commit-ms`` (100 ms by default: Kafka Streams' exactly-once default,
headrace's too; at least once Kafka Streams' default would be 30 s and headrace's 1 s).
Record caches stay at each one's default: Kafka Streams 10 MB of
``statestore.cache.max.bytes``, headrace 100,000 entries per store.

JIT warm-up: the Kafka Streams process first runs the same topology under another
application id over ``--warmup-records`` records of the warm-up topic until that group has
committed them all, closes it, and only then starts the measured instance; the clock
starts when the measured group is Stable, so the warm-up is outside every figure.

Measured per run: records/s from the group Stable until its committed offsets reach the
input's end with the output complete (``runtime_vs_peers.drive``); the CPU seconds per
million input records of the application's process (user + sys, all its threads, over
the same span); then every output is read ``read_committed`` and checked against the
reference (stateless and join: every expected ``seq`` once, fields right; count: each
user's last and highest count is its true count; windowed: each window's final count
once and right; a duplicate is reported, and under exactly-once fails the run).

Latency: for each broker, topology and guarantee, a paced producer (``latency.py``'s
generator: librdkafka, ``acks=all``, idempotent, ``linger.ms=0``) offers half the slower
peer's median rate for ``--latency-seconds``; a reader (``read_committed``) notes each
output's arrival. A record's latency is from its hand-off to the producer (its timestamp)
to the first output covering it (stateless, join: the output with its ``seq``; count:
the first count of its user at least its rank); a window's, from the wall-clock end of
the window to its final count's arrival. The first 3 s are left out.

Run: ``.venv/bin/python benchmarks/kafka_streams_vs_headrace.py [--records N]
[--topologies stateless,count,windowed,join] [--guarantees at_least_once,exactly_once_v2]
[--brokers builtin,kafka] [--runs 2] [--latency-seconds 15] [--no-latency] [--json F]``.
The same file is the program the headrace application, the generator and the reader run
(``--role``).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import pickle
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import runtime_vs_peers as peers  # noqa: E402  (sibling modules, found by the path above)

PARTITIONS = 8
# The shared harness and the modules below read the partition count from
# runtime_vs_peers (as async_enrichment.py sets it): set before they import it.
peers.PARTITIONS = PARTITIONS

import latency  # noqa: E402
from bench_broker import broker_process  # noqa: E402
from eos_throughput import read_committed  # noqa: E402

ROOT = HERE.parent
KS_SOURCE = HERE / "java" / "KsBench.java"
WINDOW_MS = 10_000
TIERS = 5
SKIP_S = 3.0  # latency: records sent in the first seconds are left out
TOPOLOGIES = ("stateless", "count", "windowed", "join")
GUARANTEES = ("at_least_once", "exactly_once_v2")
PEERS = ("headrace", "kafka-streams")
END_KEY = b"~end"
# Event time starts 4 hours ago (10,000,000 records span 3.3 hours): Apache Kafka deletes
# by time (7 days) records stamped older, and would delete the input under the run.
BASE_MS = (int(time.time() * 1000) - 4 * 3600 * 1000) // WINDOW_MS * WINDOW_MS


# -- the input, and what the output must be ----------------------------------------------


def sent_at(i: int) -> float:
    """Record ``i``'s hand-off time in seconds: 1.2 ms apart (a million records span 20
    minutes, about 8 views per user and window)."""
    return (BASE_MS + i * 6 // 5) / 1000


def stamp(i: int) -> int:
    """Record ``i``'s timestamp, computed as ``latency.record`` computes it."""
    return int(sent_at(i) * 1000)


def user_of(i: int) -> str:
    return f"user-{(i * 7) % peers.USERS}"


def tier(user: str) -> str:
    return f"tier-{int(user.split('-')[1]) % TIERS}"


def views(records: int) -> Iterator[tuple[bytes, bytes, int, int | None]]:
    """The input: ``records`` page views, then one record per partition stamped two
    windows after the last, so that every window of the views closes in every task
    (it passes no filter, joins no user, and its own window never closes)."""
    for i in range(records):
        key, value, ts = latency.record(i, sent_at(i))
        yield key, value, ts, None
    closing = stamp(max(records - 1, 0)) + 2 * WINDOW_MS
    closer = {"user": END_KEY.decode(), "page": "/", "amount": 0, "seq": -1, "sent": 0}
    for p in range(PARTITIONS):
        yield END_KEY, json.dumps(closer).encode(), closing, p


def users(ts: int) -> Iterator[tuple[bytes, bytes, int, int | None]]:
    for u in range(peers.USERS):
        name = f"user-{u}"
        yield name.encode(), tier(name).encode(), ts, None


def produce(
    bootstrap: str, topic: str, records: Iterable[tuple[bytes, bytes, int, int | None]]
) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            # Java's default partitioner for keyed records: the table is co-partitioned
            # with the stream, as Kafka Streams requires for the join
            "partitioner": "murmur2_random",
        }
    )
    for key, value, ts, partition in records:
        while True:
            try:
                # partition -1: the partitioner's choice
                producer.produce(
                    topic, value, key, -1 if partition is None else partition, timestamp=ts
                )
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(300)


def expected(topology: str, records: int) -> Any:
    if topology in ("stateless", "join"):
        return records
    if topology == "count":
        return Counter(user_of(i) for i in range(records))
    windows: Counter[str] = Counter()
    for i in range(records):
        ts = stamp(i)
        windows[f"{user_of(i)}@{ts - ts % WINDOW_MS}"] += 1
    return windows


def check(topology: str, records: int, want: Any, out: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    """The verdict on one run's output: ``wrong`` (missing, extra or false records) and
    ``duplicates`` (a record, or a window's final count, written more than once)."""
    wrong = duplicates = 0
    if topology in ("stateless", "join"):
        seen: Counter[int] = Counter()
        for key, value in out:
            v = json.loads(value)
            seen[v["seq"]] += 1
            if topology == "stateless":
                wrong += v["amount_cents"] != ((v["seq"] * 37) % 100) * 100 or v["seq"] < 0
            else:
                wrong += v.get("tier") != tier(key.decode())
        wanted = range(records) if topology == "join" else filter(latency.passes, range(records))
        missing = sum(1 for i in wanted if i not in seen)
        wrong += missing + sum(
            1
            for seq in seen
            if seq < 0 or seq >= records or not (topology == "join" or latency.passes(seq))
        )
        duplicates = sum(n - 1 for n in seen.values())
    elif topology == "count":
        last: dict[str, int] = {}
        highest: dict[str, int] = {}
        for key, value in out:
            name, n = key.decode(), int(value)
            last[name] = n
            highest[name] = max(highest.get(name, 0), n)
        last.pop(END_KEY.decode(), None)
        wrong = sum(1 for u, n in want.items() if last.get(u) != n or highest.get(u) != n)
        wrong += len(set(last) - set(want))
    else:
        finals: Counter[str] = Counter()
        for key, value in out:
            name = key.decode()
            finals[name] += 1
            wrong += want.get(name) != int(value)
        wrong += sum(1 for name in want if name not in finals)
        duplicates = sum(n - 1 for n in finals.values())
    verdict = "ok" if not wrong and not duplicates else f"wrong {wrong}, duplicates {duplicates}"
    return {"outputs": len(out), "wrong": wrong, "duplicates": duplicates, "verdict": verdict}


# -- the headrace application, the generator and the reader -------------------------------


def enriched(value: str, user_tier: str) -> str:
    """The join's joiner (KsBench.enriched does the same): the tier as the last field."""
    return f'{value[:-1]},"tier":"{user_tier}"}}'


def run_headrace(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    from headrace.dsl import Serdes, StreamsBuilder, TimeWindows, until_window_closes
    from headrace.streams.runtime import App

    builder = StreamsBuilder()
    s = Serdes.string()
    if args.topology == "stateless":
        (
            builder.stream(args.input, key_serde=s, value_serde=Serdes.json())
            .filter(lambda _k, v: v["amount"] >= 50)
            .map_values(latency.mapped)
            .to(args.output, key_serde=s, value_serde=Serdes.json())
        )
    elif args.topology == "count":
        (
            builder.stream(args.input, key_serde=s, value_serde=s)
            .group_by_key()
            .count()
            .to_stream()
            .map_values(str)
            .to(args.output, key_serde=s, value_serde=s)
        )
    elif args.topology == "windowed":
        (
            builder.stream(args.input, key_serde=s, value_serde=s)
            .group_by_key()
            .windowed_by(TimeWindows.of_size(WINDOW_MS))
            .count()
            .suppress(until_window_closes())
            .to_stream()
            .map(lambda wk, n: (f"{wk.key}@{wk.window.start}", str(n)))
            .to(args.output, key_serde=s, value_serde=s)
        )
    else:
        table = builder.table(args.table, key_serde=s, value_serde=s)
        (
            builder.stream(args.input, key_serde=s, value_serde=s)
            .join(table, enriched)
            .to(args.output, key_serde=s, value_serde=s)
        )
    App(
        args.app_id,
        builder,
        bootstrap_servers=args.bootstrap,
        state_dir=args.state_dir,
        commit_interval_ms=args.commit_ms,
        processing_guarantee=args.guarantee,
        log_level="WARNING",
    ).run()


ROLES: dict[str, Callable[[argparse.Namespace], None]] = {
    "headrace": run_headrace,
    "generator": latency.run_generator,
    "reader": latency.run_reader,
}


def helper_command(role: str, *options: str) -> list[str]:
    """This file's generator or reader (latency.py's, over this file's partitions)."""
    return [sys.executable, __file__, "--role", role, *options]


# -- one run of one peer --------------------------------------------------------------------


class Bench:
    """Runs on one broker, its input produced; ``results`` collects every figure."""

    def __init__(
        self,
        args: argparse.Namespace,
        broker: str,
        bootstrap: str,
        workdir: pathlib.Path,
        ks_cp: str,
    ) -> None:
        self.args = args
        self.broker = broker
        self.workdir = workdir
        self.ks_cp = ks_cp
        self.harness = peers.ready_harness(
            bootstrap, args.records, workdir, "views", "users", "warmup"
        )
        started = time.perf_counter()
        produce(bootstrap, "users", users(BASE_MS - 60_000))
        produce(bootstrap, "views", views(args.records))
        produce(bootstrap, "warmup", views(args.warmup_records))
        self.ends = self.harness.ends("views")
        self.runs = 0
        print(
            f"{broker}: {sum(self.ends):,} records in {PARTITIONS} partitions produced in "
            f"{time.perf_counter() - started:.1f} s (load {load()})",
            flush=True,
        )

    def command(
        self,
        peer: str,
        name: str,
        topology: str,
        guarantee: str,
        source: str,
        output: str,
        app_id: str,
    ) -> list[str]:
        h = self.harness
        if peer == "headrace":
            return peers.role_command(
                "headrace",
                __file__,
                h,
                name,
                input_topic=source,
                output=output,
                app_id=app_id,
                topology=topology,
                guarantee=guarantee,
                table="users",
                commit_ms=str(self.args.commit_ms),
            )
        warm_output = f"warm-{name}"
        h.create(warm_output)
        from jvm import QUIET_LOGGING, jdk_tool

        return [
            jdk_tool("java"),
            *QUIET_LOGGING,
            "-cp",
            self.ks_cp,
            "KsBench",
            h.bootstrap,
            topology,
            guarantee,
            app_id,
            source,
            "users",
            output,
            str(self.workdir / f"state-{name}"),
            str(self.args.commit_ms),
            f"warm-{app_id}",
            "warmup",
            warm_output,
        ]

    def throughput(
        self, peer: str, topology: str, guarantee: str, attempt: int, want: Any
    ) -> dict[str, Any]:
        self.runs += 1
        name = f"{self.broker}-{peer}-{topology}-{guarantee}-{attempt}"
        output, app_id = f"out-{name}", f"bench-{name}"
        self.harness.create(output)
        cmd = self.command(peer, name, topology, guarantee, "views", output, app_id)
        records = self.args.records
        complete: Callable[[], bool] = lambda: True  # noqa: E731
        if topology == "stateless":
            # the output's end counts transaction markers too: the check comes after. (Not
            # for the join: a record the join drops would keep the clock running forever;
            # both peers write their output before they commit the input's offsets.)
            count = sum(map(latency.passes, range(records)))
            complete = lambda: sum(self.harness.ends(output)) >= count  # noqa: E731
        cpu: dict[str, float] = {}
        result: dict[str, Any] = {
            "kind": "throughput",
            "broker": self.broker,
            "peer": peer,
            "topology": topology,
            "guarantee": guarantee,
            "attempt": attempt,
        }
        try:
            _started, joined, done = peers.drive(
                self.harness,
                cmd,
                name,
                self.workdir / f"{name}.log",
                app_id,
                "views",
                self.ends,
                output,
                self.args.timeout,
                complete,
                cpu,
            )
        except RuntimeError as failure:  # the other runs still go ahead
            print(f"{name} FAILED: {failure}", flush=True)
            return {**result, "verdict": f"failed: {str(failure).splitlines()[0]}", "load": load()}
        figures = check(topology, records, want, read_committed(self.harness, output))
        result.update(
            rate=records / (done - joined),
            seconds=done - joined,
            cpu_s_per_m=cpu["processing_cpu_s"] / records * 1e6,
            load=load(),
            **figures,
        )
        print(
            f"{self.broker:<8} {peer:<14} {topology:<9} {guarantee:<15} {result['rate']:>9,.0f} rec/s"
            f" ({result['seconds']:5.1f} s)  {result['cpu_s_per_m']:6.2f} CPU s/M  "
            f"{result['outputs']:>9,} outputs  {result['verdict']}  (load {result['load']})",
            flush=True,
        )
        return result

    def latency(self, peer: str, topology: str, guarantee: str, rate: float) -> dict[str, Any]:
        self.runs += 1
        name = f"{self.broker}-{peer}-{topology}-{guarantee}-lat"
        source, output, app_id = f"in-{name}", f"out-{name}", f"lat-{name}"
        self.harness.create(source, output)
        cmd = self.command(peer, name, topology, guarantee, source, output, app_id)
        app_log, reader_log = self.workdir / f"{name}.log", self.workdir / f"read-{name}.log"
        reader_out, sent_out = (
            self.workdir / f"read-{name}.pickle",
            self.workdir / f"sent-{name}.pickle",
        )
        bootstrap = self.harness.bootstrap
        app = latency.start(cmd, app_log)
        reader = latency.start(
            helper_command(
                "reader", "--bootstrap", bootstrap, "--topic", output, "--out", str(reader_out)
            ),
            reader_log,
        )
        try:
            deadline = time.monotonic() + 300
            while not self.harness.stable(app_id):
                if app.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{name} did not join:\n{app_log.read_text()[-3000:]}")
                time.sleep(0.1)
            while b"reading" not in reader_log.read_bytes():
                time.sleep(0.05)
            seconds = self.args.latency_seconds
            gen_log = self.workdir / f"gen-{name}.log"
            generator = latency.start(
                helper_command(
                    "generator",
                    *("--bootstrap", bootstrap, "--topic", source, "--rate", str(rate)),
                    *("--seconds", str(seconds), "--out", str(sent_out)),
                ),
                gen_log,
            )
            latency.wait_for(generator, gen_log, seconds * 3 + 120)
            time.sleep(3)  # results still in flight
            machine_load = load()
        finally:
            peers.stop(reader)
            peers.stop(app)
        with open(reader_out, "rb") as f:
            seen = pickle.load(f)
        with open(sent_out, "rb") as f:
            sent = pickle.load(f)
        latencies, missing = latencies_of(topology, sent["sent"], seen, sent["sent"][0] + SKIP_S)
        result = {
            "kind": "latency",
            "broker": self.broker,
            "peer": peer,
            "topology": topology,
            "guarantee": guarantee,
            "offered": len(sent["sent"]) / sent["elapsed"],
            "missing": missing,
            "load": machine_load,
            **latency.summary(latencies),
        }
        print(
            f"{self.broker:<8} {peer:<14} {topology:<9} {guarantee:<15} latency at "
            f"{result['offered']:>8,.0f} rec/s  p50 {result['p50']:8.1f}  p99 {result['p99']:8.1f} ms"
            f"  ({result['n']:,} results, {missing} missing, load {machine_load})",
            flush=True,
        )
        return result


def latencies_of(
    topology: str, sent: list[float], seen: list[tuple[bytes, bytes, float]], since: float
) -> tuple[list[float], int]:
    if topology == "stateless":
        return latency.stateless_latencies(sent, seen, since)
    if topology == "join":
        arrived: dict[int, float] = {}
        for _key, value, at in seen:
            arrived.setdefault(json.loads(value)["seq"], at)
        timed = [(i, t) for i, t in enumerate(sent) if t >= since]
        return [arrived[i] - t for i, t in timed if i in arrived], sum(
            1 for i, _t in timed if i not in arrived
        )
    if topology == "count":
        # the n-th record of a user is covered by the first count of n or more
        covered: dict[str, list[float]] = {}
        for key, value, at in seen:
            arrivals = covered.setdefault(key.decode(), [])
            while len(arrivals) < int(value):
                arrivals.append(at)
        ranks: Counter[str] = Counter()
        out, missing = [], 0
        for i, t in enumerate(sent):
            user = user_of(i)
            n = ranks[user]
            ranks[user] += 1
            if t < since:
                continue
            arrivals = covered.get(user, [])
            if n < len(arrivals):
                out.append(arrivals[n] - t)
            else:
                missing += 1
        return out, missing
    # windowed: from the window's end (wall clock) to its final count's arrival, for the
    # windows that ended after the skipped start and a second or more before the last
    # record was sent (a later record closes them)
    first: dict[str, float] = {}
    for key, _value, at in seen:
        first.setdefault(key.decode(), at)
    closed = {f"{user_of(i)}@{int(t * 1000) // WINDOW_MS * WINDOW_MS}" for i, t in enumerate(sent)}
    last = sent[-1] - 1
    out, missing = [], 0
    for name in closed:
        end = (int(name.split("@")[1]) + WINDOW_MS) / 1000
        if end < since or end > last:
            continue
        if name in first:
            out.append(first[name] - end)
        else:
            missing += 1
    return out, missing


def load() -> str:
    """The machine's load averages over 1, 5 and 15 minutes, as ``uptime`` shows them."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


# -- brokers ---------------------------------------------------------------------------------


@contextmanager
def broker(kind: str, workdir: pathlib.Path) -> Iterator[str]:
    """The bootstrap address of a fresh broker of ``kind``, stopped at the end."""
    if kind == "builtin":
        with broker_process(
            workdir, "--num-partitions", str(PARTITIONS), fsync="never"
        ) as bootstrap:
            yield bootstrap
        return
    from apache_kafka import KafkaCluster

    cluster = KafkaCluster(workdir / "kafka", 1).start()
    try:
        yield cluster.bootstrap
    finally:
        cluster.stop()


# -- the whole matrix and its table ------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="10000000 for the big run")
    parser.add_argument("--warmup-records", type=int, default=200_000)
    parser.add_argument("--topologies", default=",".join(TOPOLOGIES))
    parser.add_argument("--guarantees", default=",".join(GUARANTEES))
    parser.add_argument("--brokers", default="builtin,kafka")
    parser.add_argument("--runs", type=int, default=2, help="runs of each peer, alternating")
    parser.add_argument("--first", choices=PEERS, default=PEERS[0], help="who runs first")
    parser.add_argument("--commit-ms", type=int, default=100)
    parser.add_argument("--latency-seconds", type=float, default=15)
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--json", help="also write every result to this file")
    parser.add_argument("--role", choices=sorted(ROLES))
    for option in ("--topology", "--guarantee", "--bootstrap", "--input", "--output", "--table"):
        parser.add_argument(option)
    for option in ("--app-id", "--state-dir", "--topic", "--out"):
        parser.add_argument(option)
    parser.add_argument("--rate", type=float, default=0)
    parser.add_argument("--seconds", type=float, default=0)
    parser.add_argument("--count", type=int, default=0)
    args = parser.parse_args()
    if args.role:
        ROLES[args.role](args)
        return
    topologies, guarantees = args.topologies.split(","), args.guarantees.split(",")
    results: list[dict[str, Any]] = []
    print(f"start: load {load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="headrace-vs-ks-") as tmp:
        workdir = pathlib.Path(tmp)
        from jvm import compile_java

        ks_cp = compile_java([KS_SOURCE], workdir / "classes")
        for kind in args.brokers.split(","):
            here = workdir / kind
            here.mkdir()
            with broker(kind, here) as bootstrap:
                bench = Bench(args, kind, bootstrap, here, ks_cp)
                try:
                    results += measure(bench, topologies, guarantees)
                finally:
                    bench.harness.close()
                if args.json:
                    pathlib.Path(args.json).write_text(json.dumps(results, indent=2))
    report(results)
    print(f"end: load {load()}", flush=True)


def measure(bench: Bench, topologies: list[str], guarantees: list[str]) -> list[dict[str, Any]]:
    """Every topology and guarantee: ``--runs`` runs of each peer, the first peer
    alternating run by run; then the latency runs at half the slower peer's median rate."""
    args = bench.args
    results = []
    turn = 0
    for topology in topologies:
        want = expected(topology, args.records)
        for guarantee in guarantees:
            for attempt in range(args.runs):
                order = PEERS if (turn + (args.first != PEERS[0])) % 2 == 0 else PEERS[::-1]
                turn += 1
                for peer in order:
                    results.append(bench.throughput(peer, topology, guarantee, attempt, want))
    if args.no_latency:
        return results
    for topology in topologies:
        for guarantee in guarantees:
            rates = [
                [
                    r["rate"]
                    for r in results
                    if (r["peer"], r["topology"], r["guarantee"]) == (peer, topology, guarantee)
                    and "rate" in r
                ]
                for peer in PEERS
            ]
            if not all(rates):
                continue  # a peer has no rate: no half of it to offer
            rate = 0.5 * min(statistics.median(found) for found in rates)
            for peer in PEERS:
                results.append(bench.latency(peer, topology, guarantee, rate))
    return results


def report(results: list[dict[str, Any]]) -> None:
    """One row per broker, topology and guarantee: each peer's median rate and CPU cost,
    the latencies, and headrace / Kafka Streams for each."""

    def pick(kind: str, key: tuple[str, ...], peer: str, field: str) -> float | None:
        found = [
            r[field]
            for r in results
            if r["kind"] == kind
            and (r["broker"], r["topology"], r["guarantee"]) == key
            and r["peer"] == peer
            and field in r
        ]
        return statistics.median(found) if found else None

    def ratio(a: float | None, b: float | None) -> str:
        return f"{a / b:.2f}" if a is not None and b else "-"

    def fmt(x: float | None, spec: str) -> str:
        return "-" if x is None else format(x, spec)

    keys = sorted({(r["broker"], r["topology"], r["guarantee"]) for r in results})
    print(
        "\n| broker | topology | guarantee | headrace rec/s | KS rec/s | rate hr/KS | "
        "headrace CPU s/M | KS CPU s/M | CPU hr/KS | headrace p50/p99 ms | KS p50/p99 ms | "
        "p99 hr/KS | checks | load (1 5 15) |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for key in keys:
        hr_rate, ks_rate = (pick("throughput", key, p, "rate") for p in PEERS)
        hr_cpu, ks_cpu = (pick("throughput", key, p, "cpu_s_per_m") for p in PEERS)
        hr_p50, ks_p50 = (pick("latency", key, p, "p50") for p in PEERS)
        hr_p99, ks_p99 = (pick("latency", key, p, "p99") for p in PEERS)
        verdicts = {
            r["verdict"]
            for r in results
            if (r["broker"], r["topology"], r["guarantee"]) == key and "verdict" in r
        }
        loads = [r["load"] for r in results if (r["broker"], r["topology"], r["guarantee"]) == key]
        print(
            f"| {key[0]} | {key[1]} | {key[2]} | {fmt(hr_rate, ',.0f')} | {fmt(ks_rate, ',.0f')} | "
            f"{ratio(hr_rate, ks_rate)} | {fmt(hr_cpu, '.2f')} | {fmt(ks_cpu, '.2f')} | "
            f"{ratio(hr_cpu, ks_cpu)} | {fmt(hr_p50, '.0f')}/{fmt(hr_p99, '.0f')} | "
            f"{fmt(ks_p50, '.0f')}/{fmt(ks_p99, '.0f')} | {ratio(hr_p99, ks_p99)} | "
            f"{', '.join(sorted(verdicts))} | {loads[0] if loads else '-'} .. {loads[-1] if loads else '-'} |"
        )


if __name__ == "__main__":
    main()
