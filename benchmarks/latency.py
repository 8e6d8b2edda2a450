"""End-to-end latency, a record in and its result out, against Quix Streams; and the
broker's own produce latency against Tansu.

**End to end.** For each workload (``stateless``: filter + map, ``windowed``: a count
per user in tumbling 1-minute windows; both as in ``runtime_vs_peers.py``), each
guarantee (at-least-once, exactly-once) and each framework, on the built-in broker
(fsync on), three processes besides the broker:

- the application, as its framework's documentation shows (commit interval 100 ms for
  both frameworks under exactly-once; each framework's default under at-least-once);
- a load generator: a librdkafka producer (``linger.ms=0``, ``acks=all``, idempotent)
  paced to an offered rate, each value carrying its sequence number and the wall-clock
  time it was handed to the client;
- a reader of the output topic (``read_committed``), noting when each record arrived.

A record's latency is the time from its hand-off to the producer until its result is
visible to the reader: for ``stateless`` the output carrying its sequence number; for
``windowed`` the first output whose count for its user and window covers it (so an
update a cache folded into a later one counts until that later one arrives). Records
sent in the first ``--warmup`` seconds are left out of the figures; a record with no
result by the end is reported as missing.

Offered rates are 10%, 50% and 90% (``--loads``) of a measured maximum: for each
workload and guarantee, both frameworks process a flood of pre-produced input, and the
lower of their throughputs is the maximum, so that both run below capacity at every
offered rate and are compared at the same rates. ``--max-rate`` skips the floods: a
figure per workload (``stateless=N``) or per workload and guarantee
(``stateless-eos=N``).

**The broker alone.** The same generator against the built-in broker (fsync on) and
against Tansu (memory) at the stateless workload's 50% rate, no application: the time
from hand-off to the delivery report (``acks=all``).

**Commit duration.** A headrace application also reports each commit's duration D
(from its start until its transaction ended, over commits that had input to commit)
as p50 / p99 beside its latency, and where the tree logs the commit's steps, the part
after the output's flush (EndTxn) and how many commits were skipped because the one
before was still running. D is taken by wrapping ``Committer._finish``, so running this
file with another tree's interpreter measures that tree's D too.

Run: ``.venv/bin/python benchmarks/latency.py [--seconds 20] [--loads 0.1,0.5,0.9]
[--workloads stateless,windowed] [--guarantees alos,eos] [--frameworks headrace,quix]
[--max-rate stateless=N,windowed-eos=N,...] [--no-brokers] [--fsync never] [--json FILE]``.
The same file is the program each process runs (``--role``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pathlib
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench_broker import broker_process
from broker_throughput import tansu_broker
from runtime_vs_peers import (
    PAGES,
    PARTITIONS,
    USERS,
    WINDOW_MS,
    drive,
    python_for,
    quix_windowed_count,
    ready_harness,
    role_command,
    stop,
    windowed_count,
)

ROOT = pathlib.Path(__file__).resolve().parent.parent
EOS_COMMIT_MS = 100
FLOOD_RECORDS = 200_000


def record(i: int, sent: float) -> tuple[bytes, bytes, int]:
    """Record ``i``: key, JSON value (with ``seq`` and ``sent``), timestamp (the hand-off)."""
    user = f"user-{(i * 7) % USERS}"
    value = {
        "user": user,
        "page": PAGES[i % len(PAGES)],
        "amount": (i * 37) % 100,
        "seq": i,
        "sent": sent,
    }
    return user.encode(), json.dumps(value, separators=(",", ":")).encode(), int(sent * 1000)


def passes(i: int) -> bool:
    """Whether record ``i`` passes the stateless filter (``amount >= 50``)."""
    return (i * 37) % 100 >= 50


# -- the applications ----------------------------------------------------------------


def commit_ms(args: argparse.Namespace) -> int | None:
    """The commit interval an application runs with: ``--commit-ms`` when given (the
    floods), else 100 ms under exactly-once and the framework's default otherwise."""
    if args.commit_ms:
        return int(args.commit_ms)
    return EOS_COMMIT_MS if args.guarantee == "eos" else None


def mapped(v: dict[str, Any]) -> dict[str, Any]:
    return {
        "user": v["user"],
        "page": v["page"],
        "amount_cents": v["amount"] * 100,
        "seq": v.get("seq"),
        "sent": v.get("sent"),
    }


COMMIT_LINE = "commit durations ms:"


def time_commits() -> list[float]:
    """Record each commit's duration D, from its start (``_prepare``) until its
    transaction ended; the same wrapping works on every tree that has ``_finish``, so
    D can be set beside the end-to-end figures of two trees."""
    from headrace.streams.runtime import _commit

    took: list[float] = []
    finish = _commit.Committer._finish

    async def timed(self: Any, tasks: Any, mark: Any, offsets: Any, started: float) -> Any:
        done = await finish(self, tasks, mark, offsets, started)
        if offsets:  # a commit with input to commit (not an empty round)
            took.append(time.perf_counter() - started)
        return done

    _commit.Committer._finish = timed  # type: ignore[method-assign]
    return took


class _EndTimes(logging.Handler):
    """The part of each commit after the flush (under exactly-once: EndTxn), from the
    commit's debug line where the tree writes one."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.took: list[float] = []
        self.skipped = 0  # commits not begun: the one before was still running

    def emit(self, record: logging.LogRecord) -> None:
        ended = getattr(record, "ended_ms", None)
        if ended is not None and int(getattr(record, "offsets", 0)) > 0:
            self.took.append(ended / 1000)
        self.skipped += getattr(record, "skipped", 0)


def watch_commit_ends() -> _EndTimes:
    handler = _EndTimes()
    commits = logging.getLogger("headrace.streams.runtime.commit")
    commits.setLevel(logging.DEBUG)
    commits.propagate = False
    commits.addHandler(handler)
    return handler


def _quantiles(took: list[float]) -> str:
    values = sorted(d * 1000 for d in took[len(took) // 10 :])  # past the start
    return (
        f"n={len(values)} p50={percentile(values, 0.5):.1f} p99={percentile(values, 0.99):.1f}"
        if values
        else "n=0"
    )


def print_commit_durations(took: list[float], ends: _EndTimes) -> None:
    if took:
        ended = f"; after the flush {_quantiles(ends.took)}" if ends.took else ""
        skipped = f"; {ends.skipped} skipped" if ends.took else ""
        print(f"{COMMIT_LINE} {_quantiles(took)}{ended}{skipped}", flush=True)


def run_headrace(args: argparse.Namespace) -> None:
    from headrace import App, Serdes, StreamsBuilder

    took = time_commits()
    ends = watch_commit_ends()

    builder = StreamsBuilder()
    views = builder.stream(args.input, key_serde=Serdes.string(), value_serde=Serdes.json())
    if args.workload == "stateless":
        (
            views.filter(lambda _k, v: v["amount"] >= 50)
            .map_values(mapped)
            .to(args.output, key_serde=Serdes.string(), value_serde=Serdes.json())
        )
    else:
        windowed_count(views, args.output)
    App(
        args.app_id,
        builder,
        bootstrap_servers=args.bootstrap,
        state_dir=args.state_dir,
        processing_guarantee="exactly_once_v2" if args.guarantee == "eos" else "at_least_once",
        commit_interval_ms=commit_ms(args),
        log_level="WARNING",
        http_port=args.http_port,  # the metrics, when a run reads them (memory_soak.py)
    ).run()
    print_commit_durations(took, ends)


def run_quix(args: argparse.Namespace) -> None:
    from quixstreams import Application

    interval = commit_ms(args)
    app = Application(
        broker_address=args.bootstrap,
        consumer_group=args.app_id,
        auto_offset_reset="earliest",
        state_dir=args.state_dir,
        loglevel="WARNING",
        processing_guarantee="exactly-once" if args.guarantee == "eos" else "at-least-once",
        **({"commit_interval": interval / 1000} if interval else {}),
    )
    source = app.topic(args.input, key_deserializer="str", value_deserializer="json")
    sdf = app.dataframe(source)
    if args.workload == "stateless":
        out = app.topic(args.output, key_serializer="str", value_serializer="json")
        sdf = sdf.filter(lambda v: v["amount"] >= 50).apply(mapped)
        sdf.to_topic(out)
    else:
        quix_windowed_count(app, sdf, args.output)
    app.run()


# -- the load generator and the reader ---------------------------------------------------


def run_generator(args: argparse.Namespace) -> None:
    """Send ``rate`` records a second for ``seconds`` (rate 0: as fast as possible, with
    batching, for a flood of ``count`` records); write what was sent when, and how long
    each delivery report took, to ``--out``."""
    from confluent_kafka import Producer

    flood = args.rate == 0
    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5 if flood else 0,
            "queue.buffering.max.messages": 1_000_000,
            "partitioner": "murmur2_random",
        }
    )
    total = args.count if flood else int(args.rate * args.seconds)
    sent = [0.0] * total
    acked: list[float] = []

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            acked.append(time.time())

    started = time.perf_counter()
    i = 0
    while i < total:
        if not flood:
            wait = started + i / args.rate - time.perf_counter()
            if wait > 0:
                # Waiting in poll serves delivery reports as they come, so their
                # times are the acknowledgements' and not the next wake-up's.
                producer.poll(wait)
                continue
        now = time.time()
        key, value, ts = record(i, now)
        try:
            producer.produce(
                args.topic, value, key, timestamp=ts, on_delivery=None if flood else delivered
            )
        except BufferError:
            producer.poll(0.01)
            continue
        sent[i] = now
        i += 1
        if i % 64 == 0:
            producer.poll(0)
    producer.flush(120)
    elapsed = time.perf_counter() - started
    with open(args.out, "wb") as f:
        pickle.dump({"sent": sent, "acked": acked, "elapsed": elapsed}, f)


def run_reader(args: argparse.Namespace) -> None:
    """Read the output topic until SIGTERM; write (key, value, arrival) to ``--out``."""
    from confluent_kafka import Consumer, TopicPartition

    stopping = False

    def request_stop(*_: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, request_stop)
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": "latency-reader",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 100,
            "fetch.queue.backoff.ms": 1,
        }
    )
    consumer.assign([TopicPartition(args.topic, p, 0) for p in range(PARTITIONS)])
    seen: list[tuple[bytes | None, bytes | None, float]] = []
    print("reading", flush=True)
    while not stopping:
        # consume(n, timeout) waits for n messages or the timeout, whichever is first:
        # wait for one, then take what else is there without waiting.
        first = consumer.poll(0.05)
        if first is None:
            continue
        now = time.time()
        messages = [first, *consumer.consume(10_000, 0)]
        seen.extend((m.key(), m.value(), now) for m in messages if m.error() is None)
    consumer.close()
    with open(args.out, "wb") as f:
        pickle.dump(seen, f)


ROLES = {
    "headrace": run_headrace,
    "quix": run_quix,
    "generator": run_generator,
    "reader": run_reader,
}


# -- the figures ------------------------------------------------------------------------


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def summary(latencies_s: list[float]) -> dict[str, float]:
    values = sorted(latencies_s)
    return {
        "p50": percentile(values, 0.5) * 1000,
        "p99": percentile(values, 0.99) * 1000,
        "p999": percentile(values, 0.999) * 1000,
        "max": (values[-1] * 1000) if values else float("nan"),
        "n": len(values),
    }


def stateless_latencies(
    sent: list[float], seen: list[tuple[bytes, bytes, float]], since: float
) -> tuple[list[float], int]:
    arrived: dict[int, float] = {}
    for _key, value, at in seen:
        seq = json.loads(value)["seq"]
        arrived.setdefault(seq, at)
    latencies, missing = [], 0
    for i, t in enumerate(sent):
        if t < since or not passes(i):
            continue
        if i in arrived:
            latencies.append(arrived[i] - t)
        else:
            missing += 1
    return latencies, missing


def windowed_latencies(
    sent: list[float], seen: list[tuple[bytes, bytes, float]], since: float
) -> tuple[list[float], int]:
    """Record i is the n-th of its user and window; its result is the first output for
    that user and window with a count of n or more."""
    inputs: dict[str, list[float]] = {}
    for i, t in enumerate(sent):
        user = f"user-{(i * 7) % USERS}"
        ts = int(t * 1000)
        inputs.setdefault(f"{user}@{ts - ts % WINDOW_MS}", []).append(t)
    covered: dict[str, list[float]] = {}
    for key, value, at in seen:
        name, count = key.decode(), int(value)
        arrivals = covered.setdefault(name, [])
        while len(arrivals) < count:
            arrivals.append(at)
    latencies, missing = [], 0
    for name, times in inputs.items():
        arrivals = covered.get(name, [])
        for n, t in enumerate(times):
            if t < since:
                continue
            if n < len(arrivals):
                latencies.append(arrivals[n] - t)
            else:
                missing += 1
    return latencies, missing


# -- the harness --------------------------------------------------------------------------


def start(cmd: list[str], log: pathlib.Path) -> subprocess.Popen[bytes]:
    """Start ``cmd`` (an application's ``role_command``, or a helper's
    ``helper_command``), its output to ``log``; it runs until stopped."""
    with open(log, "wb") as out:
        return subprocess.Popen(
            cmd, stdout=out, stderr=out, cwd=ROOT, env={**os.environ, "PYTHONWARNINGS": "ignore"}
        )


def helper_command(role: str, *options: str) -> list[str]:
    """The command that runs this file's ``--role`` generator or reader (this
    interpreter: they use only confluent-kafka)."""
    return [sys.executable, __file__, "--role", role, *options]


def wait_for(proc: subprocess.Popen[bytes], log: pathlib.Path, timeout: float) -> None:
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise RuntimeError(f"{log.name} did not finish:\n{log.read_text()[-3000:]}") from None
    if proc.returncode != 0:
        raise RuntimeError(f"{log.name} exited with {proc.returncode}:\n{log.read_text()[-3000:]}")


class Bench:
    def __init__(
        self, bootstrap: str, workdir: pathlib.Path, seconds: float, warmup: float
    ) -> None:
        self.bootstrap = bootstrap
        self.workdir = workdir
        self.seconds = seconds
        self.warmup = warmup
        self.harness = ready_harness(bootstrap, FLOOD_RECORDS, workdir, "latency-ready")
        self.runs = 0

    def app(
        self, framework: str, workload: str, guarantee: str, name: str, commit: int = 0
    ) -> tuple[list[str], str, str, str]:
        self.runs += 1
        tag = f"{name}-{self.runs}"
        source, output, app_id = f"in-{tag}", f"out-{tag}", f"app-{tag}"
        self.harness.create(source, output)
        cmd = role_command(
            framework,
            __file__,
            self.harness,
            tag,
            input_topic=source,
            output=output,
            app_id=app_id,
            workload=workload,
            guarantee=guarantee,
            commit_ms=str(commit),
        )
        return cmd, source, output, app_id

    def generate(self, topic: str, rate: float, tag: str) -> dict[str, Any]:
        out, log = self.workdir / f"gen-{tag}.pickle", self.workdir / f"gen-{tag}.log"
        proc = start(
            helper_command(
                "generator",
                "--bootstrap",
                self.bootstrap,
                "--topic",
                topic,
                "--rate",
                str(rate),
                "--seconds",
                str(self.seconds),
                "--count",
                str(FLOOD_RECORDS),
                "--out",
                str(out),
            ),
            log,
        )
        wait_for(proc, log, self.seconds * 3 + 120)
        with open(out, "rb") as f:
            return pickle.load(f)  # type: ignore[no-any-return]

    def flood(self, framework: str, workload: str, guarantee: str) -> float:
        """Records a second ``framework`` processes from a backlog (group stable to the
        whole input committed), committing every 100 ms so that the end shows at once."""
        name = f"flood-{framework}-{workload}-{guarantee}"
        cmd, source, output, app_id = self.app(framework, workload, guarantee, name, EOS_COMMIT_MS)
        self.generate(source, 0, name)
        ends = self.harness.ends(source)
        _started, joined, done = drive(
            self.harness, cmd, name, self.workdir / f"{name}.log", app_id, source, ends, output, 600
        )
        rate = sum(ends) / (done - joined)
        print(f"max {framework:<9} {workload:<10} {guarantee:<5} {rate:>10,.0f} rec/s", flush=True)
        return rate

    def latency(
        self, framework: str, workload: str, guarantee: str, rate: float, load: float
    ) -> dict[str, Any]:
        name = f"{framework}-{workload}-{guarantee}-{int(load * 100)}"
        cmd, source, output, app_id = self.app(framework, workload, guarantee, name)
        app_log = self.workdir / f"{name}.log"
        app = start(cmd, app_log)
        reader_log = self.workdir / f"read-{name}.log"
        reader_out = self.workdir / f"read-{name}.pickle"
        reader = start(
            helper_command(
                "reader", "--bootstrap", self.bootstrap, "--topic", output, "--out", str(reader_out)
            ),
            reader_log,
        )
        try:
            deadline = time.monotonic() + 120
            while not self.harness.stable(app_id):
                if app.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{name} did not join:\n{app_log.read_text()[-3000:]}")
                time.sleep(0.1)
            while b"reading" not in reader_log.read_bytes():
                time.sleep(0.05)
            sent = self.generate(source, rate, name)
            # Results still in flight: the longest wait any framework's commit can cause.
            time.sleep(3)
            load_avg = os.getloadavg()[0]
        finally:
            stop(reader)
            stop(app)
        with open(reader_out, "rb") as f:
            seen = pickle.load(f)
        since = sent["sent"][0] + self.warmup
        measure = stateless_latencies if workload == "stateless" else windowed_latencies
        latencies, missing = measure(sent["sent"], seen, since)
        commits = next(
            (line for line in app_log.read_text().splitlines() if line.startswith(COMMIT_LINE)),
            "",
        )
        offered = len(sent["sent"]) / sent["elapsed"]
        result = {
            "framework": framework,
            "workload": workload,
            "guarantee": guarantee,
            "load": load,
            "rate": rate,
            "offered": offered,
            "missing": missing,
            "machine_load": load_avg,
            **summary(latencies),
        }
        print(
            f"{framework:<9} {workload:<10} {guarantee:<5} {int(load * 100):>3}% "
            f"{offered:>9,.0f} rec/s  p50 {result['p50']:8.1f}  p99 {result['p99']:8.1f}  "
            f"p99.9 {result['p999']:8.1f}  max {result['max']:8.1f} ms  "
            f"({result['n']:,} results, {missing} missing, load {load_avg:.1f})",
            flush=True,
        )
        if commits:
            result["commits"] = commits
            print(f"{'':9} {commits}", flush=True)
        return result

    def broker_alone(self, broker: str, bootstrap: str, rate: float) -> dict[str, Any]:
        self.runs += 1
        topic = f"alone-{self.runs}"
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
            future.result(30)
        time.sleep(0.5)
        saved, self.bootstrap = self.bootstrap, bootstrap
        try:
            sent = self.generate(topic, rate, f"alone-{broker}")
        finally:
            self.bootstrap = saved
        since = sent["sent"][0] + self.warmup
        # Delivery reports arrive in the order records were sent per partition, not
        # overall: compare the sorted hand-off and report times of the records after the
        # warm-up, a close and cheap estimate at a steady rate.
        handed = sorted(t for t in sent["sent"] if t >= since)
        acked = sorted(sent["acked"])[-len(handed) :]
        result = {
            "broker": broker,
            "rate": rate,
            **summary([a - h for h, a in zip(handed, acked, strict=True)]),
        }
        print(
            f"broker {broker:<9} {rate:>9,.0f} rec/s produce acks=all  p50 {result['p50']:8.1f}  "
            f"p99 {result['p99']:8.1f}  max {result['max']:8.1f} ms",
            flush=True,
        )
        return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--warmup", type=float, default=3)
    parser.add_argument("--loads", default="0.1,0.5,0.9")
    parser.add_argument("--workloads", default="stateless,windowed")
    parser.add_argument("--guarantees", default="alos,eos")
    parser.add_argument("--frameworks", default="headrace,quix")
    parser.add_argument("--max-rate", help="stateless=N,windowed-eos=N,...: skip the floods")
    parser.add_argument("--no-brokers", action="store_true", help="skip the broker-alone part")
    parser.add_argument("--fsync", choices=("always", "never"), default="always")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--role", choices=sorted(ROLES))
    for option in (
        "--workload",
        "--guarantee",
        "--bootstrap",
        "--input",
        "--output",
        "--app-id",
        "--state-dir",
        "--topic",
        "--out",
    ):
        parser.add_argument(option)
    parser.add_argument("--rate", type=float, default=0)
    parser.add_argument("--count", type=int, default=FLOOD_RECORDS)
    parser.add_argument("--commit-ms", type=int, default=0)
    parser.add_argument("--http-port", type=int, help="serve the headrace app's /metrics")
    args = parser.parse_args()
    if args.role:
        ROLES[args.role](args)
        return
    frameworks = args.frameworks.split(",")
    for framework in frameworks:
        python_for(framework)
    loads = [float(x) for x in args.loads.split(",")]
    fixed = dict(item.split("=") for item in args.max_rate.split(",")) if args.max_rate else {}
    results: dict[str, Any] = {"latency": [], "max": {}, "brokers": []}
    with tempfile.TemporaryDirectory(prefix="headrace-latency-") as tmp:
        workdir = pathlib.Path(tmp)
        with broker_process(
            workdir, "--num-partitions", str(PARTITIONS), fsync=args.fsync
        ) as bootstrap:
            bench = Bench(bootstrap, workdir, args.seconds, args.warmup)
            for workload in args.workloads.split(","):
                for guarantee in args.guarantees.split(","):
                    given = fixed.get(f"{workload}-{guarantee}", fixed.get(workload))
                    if given is not None:
                        top = float(given)
                    else:
                        top = min(bench.flood(f, workload, guarantee) for f in frameworks)
                    results["max"][f"{workload}-{guarantee}"] = top
                    for load in loads:
                        for framework in frameworks:
                            results["latency"].append(
                                bench.latency(framework, workload, guarantee, top * load, load)
                            )
            half = results["max"].get("stateless-alos", 4000) * 0.5
            if not args.no_brokers:
                results["brokers"].append(bench.broker_alone("headrace", bootstrap, half))
            bench.harness.close()
        if not args.no_brokers:
            with tansu_broker() as tansu:
                results["brokers"].append(bench.broker_alone("tansu", tansu, half))
    report(results["latency"], frameworks)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2))


def report(results: list[dict[str, Any]], frameworks: list[str]) -> None:
    by = {(r["framework"], r["workload"], r["guarantee"], r["load"]): r for r in results}
    for (framework, workload, guarantee, load), ours in sorted(by.items()):
        if framework != "headrace":
            continue
        for peer in (f for f in frameworks if f != "headrace"):
            theirs = by.get((peer, workload, guarantee, load))
            if theirs:
                print(
                    f"{workload:<10} {guarantee:<5} {int(load * 100):>3}%  p99 headrace/{peer} "
                    f"{ours['p99'] / theirs['p99']:6.3f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
