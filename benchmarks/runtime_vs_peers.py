"""headrace against Quix Streams and faust-streaming, end to end, on the built-in broker.

One run starts the built-in broker (a subprocess), produces the same 1,000,000 input
records once, then runs two workloads with each framework in turn, each framework as
its own process with its own consumer group and output topic:

(a) ``stateless``: JSON page views; keep those with ``amount >= 50`` (half of them),
    map each to ``{"user", "page", "amount_cents"}``, write JSON to the output topic;
(b) ``windowed``: count page views per user in tumbling 1-minute windows (event
    time, nothing late), with state kept by each framework's store and changelog;
    write ``"user@window_start" -> "count"`` to the output topic.

A run is done when the group's committed offsets reach the end of every input
partition and (stateless) the output holds every expected record. The clock runs from
the process start (imports, topic set-up and group join included: "total") and, for
the throughput figure, from the moment the group is Stable, its partitions assigned,
to done ("processing"). After the
clock stops the output is checked: (a) exactly the expected records (at least once:
duplicates are counted and reported); (b) for every (user, window) the highest count
written equals the true count, so every input record is reflected in the output.

Quix Streams runs the windowed count twice: ``quix`` emits every update
(``.current()``: one output per input record) and ``quix-final`` emits each window once
it closes (``.final()``). headrace's record cache sits between the two (one update per
key and window per commit), so the pair brackets it. A window closes in Quix when its
key's newest timestamp reaches the window's end, so with a finite input each key's last
window never closes; ``quix-final`` is checked on the windows that closed, and must
write nothing else.

Peers run from the project's peer virtualenv ``.venv-peers`` (the one ``scripts/dev
test`` makes from ``tests/peers/requirements.txt``; created here on first use if
missing), because Quix Streams pins a confluent-kafka version other than the project's. Each framework is used as its documentation shows, with commit intervals
set to 100 ms for all three (BENCH_COMMIT_S); faust keeps its table in memory (its default store).

Run: ``.venv/bin/python benchmarks/runtime_vs_peers.py [--records N]
[--frameworks headrace,quix,faust] [--workloads stateless,windowed] [--fsync never]``.
The same file is the program each framework runs (``--role``).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from bench_broker import broker_process

ROOT = pathlib.Path(__file__).resolve().parent.parent
PEERS_VENV = ROOT / ".venv-peers"
PEERS_REQUIREMENTS = ROOT / "tests" / "peers" / "requirements.txt"
PARTITIONS = 4
USERS = 1000
PAGES = ("/", "/pricing", "/docs", "/blog", "/signup")
WINDOW_MS = 60_000
# Event time ends about now: faust expires windowed-table entries against the wall
# clock, and would drop the counts of old event times while counting them.
BASE_MS = (int(time.time() * 1000) // WINDOW_MS - 25) * WINDOW_MS
COMMIT_S = float(os.environ.get("BENCH_COMMIT_S", "0.1"))


# -- the input, and what the output must be ----------------------------------------------


def event(i: int) -> tuple[bytes, bytes, int]:
    """Record ``i`` of the input: key, JSON value, timestamp (1.2 ms apart: 20 minutes
    of event time for a million records, so every user has about 50 views per window)."""
    user = f"user-{(i * 7) % USERS}"
    value = {"user": user, "page": PAGES[i % len(PAGES)], "amount": (i * 37) % 100}
    return user.encode(), json.dumps(value, separators=(",", ":")).encode(), BASE_MS + i * 6 // 5


def expected_closed_windows(records: int) -> dict[str, int]:
    """The windows ``.final()`` emits: those whose end its key's newest timestamp has
    reached (Quix's closing by key, grace 0; each key's timestamps only grow here)."""
    newest: dict[str, int] = {}
    for i in range(records):
        key, _v, ts = event(i)
        newest[key.decode()] = ts
    return {
        name: n
        for name, n in expected_windows(records).items()
        if int(name.rsplit("@", 1)[1]) + WINDOW_MS <= newest[name.rsplit("@", 1)[0]]
    }


def expected_stateless(records: int) -> int:
    return sum(1 for i in range(records) if (i * 37) % 100 >= 50)


def expected_windows(records: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for i in range(records):
        key, _v, ts = event(i)
        name = f"{key.decode()}@{ts - ts % WINDOW_MS}"
        counts[name] = counts.get(name, 0) + 1
    return counts


# -- the applications, one per framework and workload ------------------------------------


def windowed_count(views: Any, output: str) -> None:
    """The headrace windowed-count topology: tumbling-window counts per key, keyed
    ``key@window-start`` (the eos benchmark runs the same one)."""
    from headrace.dsl import Serdes, TimeWindows

    (
        views.group_by_key()
        .windowed_by(TimeWindows.of_size(WINDOW_MS))
        .count()
        .to_stream()
        .map(lambda wk, n: (f"{wk.key}@{wk.window.start}", str(n)))
        .to(output, key_serde=Serdes.string(), value_serde=Serdes.string())
    )


def run_headrace(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    from headrace.dsl import Serdes, StreamsBuilder
    from headrace.streams.runtime import App

    builder = StreamsBuilder()
    views = builder.stream(args.input, key_serde=Serdes.string(), value_serde=Serdes.json())
    if args.workload == "stateless":
        (
            views.filter(lambda _k, v: v["amount"] >= 50)
            .map_values(
                lambda v: {"user": v["user"], "page": v["page"], "amount_cents": v["amount"] * 100}
            )
            .to(args.output, key_serde=Serdes.string(), value_serde=Serdes.json())
        )
    else:
        windowed_count(views, args.output)
    App(
        args.app_id,
        builder,
        bootstrap_servers=args.bootstrap,
        state_dir=args.state_dir,
        commit_interval_ms=int(COMMIT_S * 1000),
        log_level="WARNING",
    ).run()


def run_quix(args: argparse.Namespace, *, final: bool = False) -> None:
    from quixstreams import Application

    app = Application(
        broker_address=args.bootstrap,
        consumer_group=args.app_id,
        auto_offset_reset="earliest",
        commit_interval=COMMIT_S,
        state_dir=args.state_dir,
        loglevel="WARNING",
    )
    source = app.topic(args.input, key_deserializer="str", value_deserializer="json")
    sdf = app.dataframe(source)
    if args.workload == "stateless":
        out = app.topic(args.output, key_serializer="str", value_serializer="json")
        sdf = sdf.filter(lambda v: v["amount"] >= 50)
        sdf = sdf.apply(
            lambda v: {"user": v["user"], "page": v["page"], "amount_cents": v["amount"] * 100}
        )
        sdf.to_topic(out)
    else:
        quix_windowed_count(app, sdf, args.output, final=final)
    app.run()


def quix_windowed_count(app: Any, sdf: Any, output: str, *, final: bool = False) -> None:
    """The Quix Streams windowed count: ``key@window-start -> count`` on every update
    (``.current()``), or once per window when it closes (``.final()``); the count alone
    as the value (the latency benchmark runs it too)."""
    from quixstreams.models import Serializer

    class CountOnly(Serializer):  # type: ignore[misc]
        def __call__(self, value: dict[str, Any], ctx: Any) -> bytes:
            return str(value["n"]).encode()

    out = app.topic(output, key_serializer="str", value_serializer=CountOnly())
    window = sdf.tumbling_window(WINDOW_MS).count()
    sdf = window.final() if final else window.current()
    sdf = sdf.apply(
        lambda w, key, _ts, _h: {"k": f"{key}@{w['start']}", "n": w["value"]}, metadata=True
    )
    sdf.to_topic(out, key=lambda r: r["k"])


def run_faust(args: argparse.Namespace) -> None:
    from datetime import timedelta

    import faust
    import orjson

    app = faust.App(
        args.app_id,
        broker=f"kafka://{args.bootstrap}",
        store="memory://",
        web_enabled=False,
        topic_partitions=PARTITIONS,
        broker_commit_interval=COMMIT_S,
        consumer_auto_offset_reset="earliest",
        datadir=args.state_dir,
    )
    source = app.topic(args.input, key_serializer="raw", value_serializer="raw")
    out = app.topic(args.output, key_serializer="raw", value_serializer="raw")
    if args.workload == "stateless":

        @app.agent(source)  # type: ignore[untyped-decorator]  # faust ships no annotations
        async def stateless(stream: Any) -> None:
            async for key, value in stream.items():
                v = orjson.loads(value)
                if v["amount"] >= 50:
                    mapped = {
                        "user": v["user"],
                        "page": v["page"],
                        "amount_cents": v["amount"] * 100,
                    }
                    await out.send(key=key, value=orjson.dumps(mapped))
    else:
        counts = (
            app.Table("views", default=int)
            .tumbling(timedelta(milliseconds=WINDOW_MS), expires=timedelta(hours=1))
            .relative_to_stream()
        )

        @app.agent(source)  # type: ignore[untyped-decorator]  # faust ships no annotations
        async def windowed(stream: Any) -> None:
            async for event in stream.events():
                key = event.key
                counts[key] += 1
                start = int(event.message.timestamp * 1000) // WINDOW_MS * WINDOW_MS
                n = counts[key].current()
                await out.send(key=f"{key.decode()}@{start}".encode(), value=str(n).encode())

    sys.argv = [sys.argv[0], "worker", "--loglevel", "warn", "--without-web"]
    app.main()


ROLES: dict[str, Callable[[argparse.Namespace], None]] = {
    "headrace": run_headrace,
    "quix": run_quix,
    "quix-final": lambda args: run_quix(args, final=True),
    "faust": run_faust,
}


# -- the harness ---------------------------------------------------------------------------


def python_for(framework: str) -> str:
    """The interpreter a framework runs under: the peers share ``.venv-peers``."""
    if framework == "headrace":
        return sys.executable
    python = PEERS_VENV / "bin" / "python"
    if not python.exists():
        print(f"creating {PEERS_VENV} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-r", str(PEERS_REQUIREMENTS)], check=True
        )
    return str(python)


class Harness:
    def __init__(self, bootstrap: str, records: int, workdir: pathlib.Path) -> None:
        from confluent_kafka import Consumer
        from confluent_kafka.admin import AdminClient

        self.bootstrap = bootstrap
        self.records = records
        self.workdir = workdir
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.watcher = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "bench-watcher",
                "enable.auto.commit": False,
            }
        )
        self._offset_readers: dict[str, Any] = {}

    def create(self, *topics: str) -> None:
        from confluent_kafka.admin import NewTopic

        futures = self.admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in topics])
        for future in futures.values():
            future.result()

    def produce_input(self, topic: str) -> float:
        from confluent_kafka import Producer

        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "linger.ms": 20,
                "batch.size": 1_000_000,
                "queue.buffering.max.messages": 1_000_000,
                "partitioner": "murmur2_random",
            }
        )
        started = time.perf_counter()
        for i in range(self.records):
            key, value, ts = event(i)
            while True:
                try:
                    producer.produce(topic, value, key, timestamp=ts)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.flush(120)
        return time.perf_counter() - started

    def ends(self, topic: str) -> list[int]:
        from confluent_kafka import TopicPartition

        return [
            self.watcher.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(PARTITIONS)
        ]

    def stable(self, group: str) -> bool:
        """Whether ``group`` has members with partitions assigned (it is Stable)."""
        from confluent_kafka import ConsumerGroupState

        future = self.admin.describe_consumer_groups([group])[group]
        try:
            return bool(future.result(10).state == ConsumerGroupState.STABLE)
        except Exception:
            return False

    def committed(self, group: str, topic: str) -> list[int]:
        """The group's committed offsets; one client per group, kept (created per poll
        it would cost the machine more than the polling itself)."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = self._offset_readers.get(group)
        if consumer is None:
            consumer = self._offset_readers[group] = Consumer(
                {
                    "bootstrap.servers": self.bootstrap,
                    "group.id": group,
                    "enable.auto.commit": False,
                }
            )
        got = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        return [max(tp.offset, 0) for tp in got]

    def close(self) -> None:
        for consumer in self._offset_readers.values():
            consumer.close()
        self.watcher.close()

    def read_all(self, topic: str) -> list[tuple[bytes, bytes]]:
        from confluent_kafka import Consumer, TopicPartition

        ends = self.ends(topic)
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "bench-reader",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
            }
        )
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        out: list[tuple[bytes, bytes]] = []
        try:
            while len(out) < sum(ends):
                for message in consumer.consume(10_000, timeout=2):
                    if message.error() is None:
                        key, value = message.key(), message.value()
                        assert key is not None and value is not None  # the apps write both
                        out.append((key, value))
        finally:
            consumer.close()
        return out


def run_one(
    harness: Harness,
    framework: str,
    workload: str,
    input_topic: str,
    input_ends: list[int],
    expected: Any,
    timeout: float,
) -> dict[str, Any]:
    name = f"{framework}-{workload}"
    output, app_id = f"out-{name}", f"bench-{name}"
    harness.create(output)
    log_path = harness.workdir / f"{name}.log"
    cmd = role_command(
        framework,
        __file__,
        harness,
        name,
        input_topic=input_topic,
        output=output,
        app_id=app_id,
        workload=workload,
    )

    def output_complete() -> bool:
        return workload != "stateless" or sum(harness.ends(output)) >= expected

    cpu: dict[str, float] = {}
    started, joined, done = drive(
        harness,
        cmd,
        name,
        log_path,
        app_id,
        input_topic,
        input_ends,
        output,
        timeout,
        output_complete,
        cpu,
    )
    result: dict[str, Any] = {
        "framework": framework,
        "workload": workload,
        "total_s": done - started,
        "processing_s": done - joined,
        # CPU of the framework's process (its client's threads included) per input
        # record while processing: a load that slows the clock moves this far less.
        "cpu_us": cpu["processing_cpu_s"] / harness.records * 1e6,
    }
    result.update(check(harness.read_all(output), workload, expected))
    result["rate"] = harness.records / result["processing_s"]
    # The machine is shared: its load during the run says how far the figure can be trusted.
    result["load"] = os.getloadavg()[0]
    print(
        f"{framework:<10} {workload:<10} {harness.records / result['total_s']:>10,.0f} rec/s total "
        f"({result['total_s']:6.1f} s)  {result['rate']:>10,.0f} rec/s processing "
        f"({result['processing_s']:6.1f} s)  {result['cpu_us']:5.2f} us CPU/record  "
        f"{result['outputs']:>9,} outputs  {result['verdict']}  (load {result['load']:.1f})",
        flush=True,
    )
    return result


def ready_harness(
    bootstrap: str, records: int, workdir: pathlib.Path, *topics: str, within: float = 20
) -> Harness:
    """A harness on a broker just started, ``topics`` created: retried until the broker
    answers, for up to ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        try:
            harness = Harness(bootstrap, records, workdir)
            harness.create(*topics)
            return harness
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def role_command(
    framework: str,
    script: str,
    harness: Harness,
    name: str,
    *,
    input_topic: str,
    output: str,
    app_id: str,
    **options: str,
) -> list[str]:
    """The command that runs ``script``'s ``--role framework`` (the app under test)
    against the harness's broker, its state in ``state-<name>`` of the work dir;
    ``options`` add ``--option value`` pairs (``_`` in a name becomes ``-``)."""
    cmd = [
        python_for(framework),
        script,
        "--role",
        framework,
        "--bootstrap",
        harness.bootstrap,
        "--input",
        input_topic,
        "--output",
        output,
        "--app-id",
        app_id,
        "--state-dir",
        str(harness.workdir / f"state-{name}"),
    ]
    for option, value in options.items():
        cmd += [f"--{option.replace('_', '-')}", value]
    return cmd


def drive(
    harness: Harness,
    cmd: list[str],
    name: str,
    log_path: pathlib.Path,
    app_id: str,
    input_topic: str,
    input_ends: list[int],
    output: str,
    timeout: float,
    output_complete: Any = lambda: True,
    cpu: dict[str, float] | None = None,
) -> tuple[float, float, float]:
    """Run one framework's process until its group has committed all of the input.

    Returns (started, joined, done): process start, the group turning stable (the
    processing clock starts), and the moment every input offset is committed with
    ``output_complete()`` true. The process is stopped with SIGTERM either way.
    ``cpu``, when given, gets ``"processing_cpu_s"``: the CPU seconds the process spent
    between joined and done (on a busy machine a steadier measure than the clock).
    """
    with open(log_path, "wb") as log:
        started = time.perf_counter()
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=log, cwd=ROOT, env={**os.environ, "PYTHONWARNINGS": "ignore"}
        )
    joined = done = None
    cpu_at_join = 0.0
    try:
        while done is None:
            time.sleep(0.1)
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{_tail(log_path)}")
            if time.perf_counter() - started > timeout:
                raise RuntimeError(
                    f"{name} did not finish within {timeout:.0f}s:\n{_tail(log_path)}"
                )
            if joined is None and harness.stable(app_id):
                joined = time.perf_counter()
                cpu_at_join = _cpu_seconds(proc.pid)
            if joined is None or not output_complete():
                continue
            if harness.committed(app_id, input_topic) == input_ends:
                done = time.perf_counter()
                if cpu is not None:
                    cpu["processing_cpu_s"] = _cpu_seconds(proc.pid) - cpu_at_join
        # The clock has stopped; give output still in flight (a framework may commit
        # input offsets before its last sends are acknowledged) a chance to land.
        settle_output(harness, output)
    finally:
        stop(proc)
    assert joined is not None and done is not None
    return started, joined, done


def _cpu_seconds(pid: int) -> float:
    import psutil

    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, and SIGKILL if the process has not exited 30 s later."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def settle_output(harness: Harness, topic: str, quiet: float = 1.0, limit: float = 30.0) -> None:
    """Wait until ``topic`` has not grown for ``quiet`` seconds (at most ``limit``)."""
    deadline = time.perf_counter() + limit
    last, since = sum(harness.ends(topic)), time.perf_counter()
    while time.perf_counter() < deadline and time.perf_counter() - since < quiet:
        time.sleep(0.1)
        now = sum(harness.ends(topic))
        if now != last:
            last, since = now, time.perf_counter()


def _tail(path: pathlib.Path) -> str:
    return path.read_text(errors="replace")[-4000:]


def check(out: list[tuple[bytes, bytes]], workload: str, expected: Any) -> dict[str, Any]:
    if workload == "stateless":
        sample = json.loads(out[0][1]) if out else {}
        ok = len(out) >= expected and set(sample) == {"user", "page", "amount_cents"}
        verdict = "ok" if len(out) == expected and ok else ("DUPLICATES" if ok else "WRONG")
        return {"outputs": len(out), "verdict": verdict}
    best: dict[str, int] = {}
    for key, value in out:
        name, n = key.decode(), int(value)
        if n > best.get(name, 0):
            best[name] = n
    wrong = sorted((name, best.get(name), n) for name, n in expected.items() if best.get(name) != n)
    extra = sorted(set(best) - set(expected))
    verdict = (
        "ok"
        if not wrong and not extra
        else f"WRONG ({len(wrong)} of {len(expected)} windows differ, e.g. (window, got, want)"
        f" {wrong[:3]}; {len(extra)} unexpected windows {extra[:3]})"
    )
    return {"outputs": len(out), "verdict": verdict}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument(
        "--frameworks",
        default="headrace,quix,faust",
        help="of headrace, quix, quix-final (the windowed count with .final()), faust",
    )
    parser.add_argument("--workloads", default="stateless,windowed")
    parser.add_argument("--fsync", choices=("always", "never"), default="never")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--role", choices=sorted(ROLES))
    for option in ("--workload", "--bootstrap", "--input", "--output", "--app-id", "--state-dir"):
        parser.add_argument(option)
    args = parser.parse_args()
    if args.role:
        ROLES[args.role](args)
        return
    frameworks = args.frameworks.split(",")
    workloads = args.workloads.split(",")
    for framework in frameworks:
        python_for(framework)
    with tempfile.TemporaryDirectory(prefix="headrace-peers-") as tmp:
        workdir = pathlib.Path(tmp)
        with broker_process(
            workdir, "--num-partitions", str(PARTITIONS), fsync=args.fsync
        ) as bootstrap:
            results = bench(bootstrap, args, frameworks, workloads, workdir)
    report(results, frameworks, workloads)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2))


def bench(
    bootstrap: str,
    args: argparse.Namespace,
    frameworks: list[str],
    workloads: list[str],
    workdir: pathlib.Path,
) -> list[dict[str, Any]]:
    harness = ready_harness(bootstrap, args.records, workdir, "page-views")
    seconds = harness.produce_input("page-views")
    ends = harness.ends("page-views")
    print(
        f"input: {sum(ends):,} records in {PARTITIONS} partitions, produced in {seconds:.1f} s; "
        f"broker fsync={args.fsync}",
        flush=True,
    )
    expected = {
        "stateless": expected_stateless(args.records),
        "windowed": expected_windows(args.records),
        "windowed-final": expected_closed_windows(args.records),
    }
    results = []
    try:
        for workload in workloads:
            for framework in frameworks:
                if framework == "quix-final" and workload != "windowed":
                    continue  # .final() changes the windowed count only
                wanted = "windowed-final" if framework == "quix-final" else workload
                results.append(
                    run_one(
                        harness,
                        framework,
                        workload,
                        "page-views",
                        ends,
                        expected[wanted],
                        args.timeout,
                    )
                )
    finally:
        harness.close()
    return results


def report(results: list[dict[str, Any]], frameworks: list[str], workloads: list[str]) -> None:
    by = {(r["framework"], r["workload"]): r for r in results}
    for workload in workloads:
        ours = by.get(("headrace", workload))
        if ours is None:
            continue
        for peer in (f for f in frameworks if f != "headrace"):
            theirs = by.get((peer, workload))
            if theirs is None:
                continue
            print(
                f"{workload:<10} headrace / {peer:<10} processing {ours['rate'] / theirs['rate']:5.1f}x"
                f"   total {theirs['total_s'] / ours['total_s']:5.1f}x"
                f"   by CPU per record {theirs['cpu_us'] / ours['cpu_us']:5.1f}x"
            )


if __name__ == "__main__":
    main()
