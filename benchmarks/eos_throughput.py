"""Exactly-once throughput: headrace at least once vs exactly once, and Quix Streams
exactly once, on the built-in broker, in one run.

Two workloads, each framework as its own process with its own group and output topic:

- ``windowed``: the windowed count of ``runtime_vs_peers.py`` (page views per user in
  tumbling 1-minute windows, RocksDB store and changelog);
- ``payments``: running balances per account (``examples/payments.py``): 1,000
  accounts, every payment updates the account's balance in a RocksDB store and writes
  ``"<balance>,<payments>"``.

Runs: headrace ``at_least_once``, headrace ``exactly_once_v2``, Quix Streams
``processing_guarantee="exactly-once"`` (its windowed count with ``.current()``, and as
``quix-eos-final`` with ``.final()``, checked on the windows that closed: see
``runtime_vs_peers.py``); commit interval 100 ms for all (the
exactly-once default of both). The clock runs from the group being Stable to the
group's committed offsets reaching the end of the input ("processing"). Afterwards the
output is read read_committed and checked: windowed, every window's highest count is
its true count; payments, every account's last balance is its exact sum and covers
exactly its number of payments (a higher number means a payment counted twice).

Run: ``.venv/bin/python benchmarks/eos_throughput.py [--records N]
[--runs headrace-alos,headrace-eos,quix-eos] [--workloads windowed,payments]
[--repeat 3]``: with ``--repeat`` every run goes that many times, alternating, and the
medians are compared.
Quix runs from ``.venv-peers`` (``runtime_vs_peers.python_for``). The same file is the
program each run starts (``--role``).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import statistics
import sys
import tempfile
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from bench_broker import broker_process  # sibling modules, found by the path above
from runtime_vs_peers import (
    COMMIT_S,
    PARTITIONS,
    ROOT,
    Harness,
    check,
    drive,
    expected_closed_windows,
    expected_windows,
    python_for,
    quix_windowed_count,
    ready_harness,
    role_command,
    windowed_count,
)

ACCOUNTS = 1000
RUNS = {
    "headrace-alos": ("headrace", "at_least_once"),
    "headrace-eos": ("headrace", "exactly_once_v2"),
    "quix-eos": ("quix", "exactly-once"),
    "quix-alos": ("quix", "at-least-once"),
    "quix-eos-final": ("quix", "exactly-once"),
}
FINAL = {"quix-eos-final"}  # the windowed count emitted with .final(), not .current()


def payment(i: int, rng: random.Random) -> tuple[bytes, bytes]:
    return f"acct-{rng.randrange(ACCOUNTS):04d}".encode(), str(rng.randint(-500, 1000)).encode()


def payments(records: int) -> list[tuple[bytes, bytes]]:
    rng = random.Random(8)
    return [payment(i, rng) for i in range(records)]


def expected_payments(records: int) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for key, value in payments(records):
        total, n = out.get(key.decode(), (0, 0))
        out[key.decode()] = (total + int(value), n + 1)
    return out


# -- the applications ----------------------------------------------------------------------


def run_headrace(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    from headrace.dsl import Serdes, StreamsBuilder
    from headrace.examples.payments import build
    from headrace.streams.runtime import App

    if args.workload == "payments":
        builder = build(source=args.input, sink=args.output)
    else:
        builder = StreamsBuilder()
        windowed_count(
            builder.stream(args.input, key_serde=Serdes.string(), value_serde=Serdes.json()),
            args.output,
        )
    App(
        args.app_id,
        builder,
        bootstrap_servers=args.bootstrap,
        state_dir=args.state_dir,
        commit_interval_ms=int(COMMIT_S * 1000),
        processing_guarantee=args.guarantee,
        log_level="WARNING",
    ).run()


def run_quix(args: argparse.Namespace) -> None:
    from quixstreams import Application

    app = Application(
        broker_address=args.bootstrap,
        consumer_group=args.app_id,
        auto_offset_reset="earliest",
        commit_interval=COMMIT_S,
        state_dir=args.state_dir,
        loglevel="WARNING",
        processing_guarantee=args.guarantee,
    )
    if args.workload == "payments":
        source = app.topic(args.input, key_deserializer="str", value_deserializer="str")
        out = app.topic(args.output, key_serializer="str", value_serializer="str")

        def apply(value: str, state: Any) -> str:
            total, n = state.get("balance", (0, 0))
            total, n = total + int(value), n + 1
            state.set("balance", (total, n))
            return f"{total},{n}"

        app.dataframe(source).apply(apply, stateful=True).to_topic(out)
    else:
        source = app.topic(args.input, key_deserializer="str", value_deserializer="json")
        quix_windowed_count(app, app.dataframe(source), args.output, final=args.emit == "final")
    app.run()


ROLES = {"headrace": run_headrace, "quix": run_quix}


# -- the harness ---------------------------------------------------------------------------


def produce_payments(harness: Harness, topic: str) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": harness.bootstrap,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "partitioner": "murmur2_random",
        }
    )
    for key, value in payments(harness.records):
        while True:
            try:
                producer.produce(topic, value, key)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(120)


def read_committed(harness: Harness, topic: str) -> list[tuple[bytes, bytes]]:
    """Everything committed in ``topic``. Transactional output holds commit markers, which
    take offsets but are no records, so reading stops when every partition's position
    reached its end, not when the record count does."""
    from confluent_kafka import Consumer, TopicPartition

    ends = harness.ends(topic)
    consumer = Consumer(
        {
            "bootstrap.servers": harness.bootstrap,
            "group.id": "eos-bench-reader",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    parts = [TopicPartition(topic, p, 0) for p in range(PARTITIONS)]
    consumer.assign(parts)
    out: list[tuple[bytes, bytes]] = []
    try:
        while True:
            for message in consumer.consume(10_000, timeout=1):
                if message.error() is None:
                    key, value = message.key(), message.value()
                    assert key is not None and value is not None  # the job writes both
                    out.append((key, value))
            positions = [tp.offset for tp in consumer.position(parts)]
            if all(pos >= end for pos, end in zip(positions, ends, strict=True)):
                return out
    finally:
        consumer.close()


def check_payments(
    out: list[tuple[bytes, bytes]], expected: dict[str, tuple[int, int]]
) -> dict[str, Any]:
    last: dict[str, tuple[int, int]] = {}
    for key, value in out:
        total, n = value.decode().split(",")
        account = key.decode()
        if int(n) >= last.get(account, (0, 0))[1]:
            last[account] = (int(total), int(n))
    twice = sum(1 for a, (_t, n) in expected.items() if last.get(a, (0, 0))[1] > n)
    wrong = sum(1 for a, want in expected.items() if last.get(a) != want)
    verdict = "ok" if not wrong else f"WRONG ({wrong} accounts, {twice} counting a payment twice)"
    return {"outputs": len(out), "verdict": verdict}


def run_one(
    harness: Harness,
    run: str,
    workload: str,
    input_topic: str,
    ends: list[int],
    expected: Any,
    timeout: float,
    attempt: int = 0,
) -> dict[str, Any]:
    framework, guarantee = RUNS[run]
    name = f"{run}-{workload}" + (f"-{attempt}" if attempt else "")
    output, app_id = f"out-{name}", f"eos-bench-{name}"
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
        guarantee=guarantee,
        emit="final" if run in FINAL else "current",
    )
    cpu: dict[str, float] = {}
    _started, joined, done = drive(
        harness, cmd, name, log_path, app_id, input_topic, ends, output, timeout, cpu=cpu
    )
    out = read_committed(harness, output)
    result: dict[str, Any] = {"run": run, "workload": workload, "processing_s": done - joined}
    result["cpu_us"] = cpu["processing_cpu_s"] / harness.records * 1e6
    result.update(
        check_payments(out, expected)
        if workload == "payments"
        else check(out, "windowed", expected)
    )
    result["rate"] = harness.records / result["processing_s"]
    print(
        f"{run:<14} {workload:<9} {result['rate']:>9,.0f} rec/s ({result['processing_s']:5.1f} s)"
        f"  {result['cpu_us']:5.2f} CPU us/record  {result['outputs']:>8,} outputs"
        f"  {result['verdict']}"
        f"  (load {os.getloadavg()[0]:.1f})",
        flush=True,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--runs", default="headrace-alos,headrace-eos,quix-eos")
    parser.add_argument("--workloads", default="windowed,payments")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each, alternating; medians reported"
    )
    parser.add_argument("--role", choices=sorted(ROLES))
    for option in (
        "--workload",
        "--bootstrap",
        "--input",
        "--output",
        "--app-id",
        "--state-dir",
        "--guarantee",
        "--emit",
    ):
        parser.add_argument(option)
    args = parser.parse_args()
    if args.role:
        ROLES[args.role](args)
        return
    runs, workloads = args.runs.split(","), args.workloads.split(",")
    for run in runs:
        python_for(RUNS[run][0])
    with tempfile.TemporaryDirectory(prefix="headrace-eos-") as tmp:
        workdir = pathlib.Path(tmp)
        with broker_process(workdir, "--num-partitions", str(PARTITIONS)) as bootstrap:
            results = bench(bootstrap, args, runs, workloads, workdir)
    report(results, workloads)


def bench(
    bootstrap: str,
    args: argparse.Namespace,
    runs: list[str],
    workloads: list[str],
    workdir: pathlib.Path,
) -> list[dict[str, Any]]:
    harness = ready_harness(bootstrap, args.records, workdir, "page-views", "payments")
    harness.produce_input("page-views")
    produce_payments(harness, "payments")
    inputs = {"windowed": "page-views", "payments": "payments"}
    expected = {
        "windowed": expected_windows(args.records),
        "windowed-final": expected_closed_windows(args.records),
        "payments": expected_payments(args.records),
    }
    print(f"input: {args.records:,} records per workload in {PARTITIONS} partitions", flush=True)
    results = []
    try:
        for workload in workloads:
            ends = harness.ends(inputs[workload])
            for attempt in range(args.repeat):
                for run in runs:
                    if run in FINAL and workload != "windowed":
                        continue  # .final() changes the windowed count only
                    wanted = "windowed-final" if run in FINAL else workload
                    results.append(
                        run_one(
                            harness,
                            run,
                            workload,
                            inputs[workload],
                            ends,
                            expected[wanted],
                            args.timeout,
                            attempt,
                        )
                    )
    finally:
        harness.close()
    return results


def report(results: list[dict[str, Any]], workloads: list[str]) -> None:
    """The median rate and CPU cost of each run and workload, and headrace EOS against
    the others by both (on a busy machine the CPU cost moves less than the rate)."""
    rates: dict[tuple[str, str], list[float]] = {}
    cpus: dict[tuple[str, str], list[float]] = {}
    for r in results:
        rates.setdefault((r["run"], r["workload"]), []).append(r["rate"])
        cpus.setdefault((r["run"], r["workload"]), []).append(r["cpu_us"])
    by = {key: statistics.median(found) for key, found in rates.items()}
    cpu = {key: statistics.median(found) for key, found in cpus.items()}
    for (run, workload), rate in sorted(by.items()):
        print(
            f"{run:<14} {workload:<9} median {rate:>9,.0f} rec/s,"
            f" {cpu[(run, workload)]:5.2f} CPU us/record, over {len(rates[(run, workload)])}"
        )
    for workload in workloads:
        eos = by.get(("headrace-eos", workload))
        if eos is None:
            continue
        for other in ("headrace-alos", "quix-eos", "quix-eos-final"):
            if (other, workload) in by:
                per_cpu = cpu[(other, workload)] / cpu[("headrace-eos", workload)]
                print(
                    f"{workload:<9} headrace-eos / {other:<14} {eos / by[(other, workload)]:5.2f}x"
                    f" rate, {per_cpu:5.2f}x records per CPU second"
                )


if __name__ == "__main__":
    main()
