"""The exactly-once fault campaign, long form: the cases of
``tests/streams/runtime/eos_campaign.py`` (every topology kind SIGKILLed at a step of a
commit or while restoring, restarted on the same or an emptied state directory, some
with a broker SIGKILL; a read_committed reader checks every output against the input)
with many runs, and the stateless kind at volume (``--volume``, 1,000,000 records by
default: the transaction-begin race needed volume to show).

Each run draws its cases from a seeded generator: a kind, a kill phase, a restart kind
and, one run in four, a broker kill. The built-in broker is a fresh subprocess per
campaign; Apache Kafka is three KRaft nodes (replication 3, min.insync.replicas 2 on
the internal topics) shared by its runs.

Run: ``.venv/bin/python benchmarks/eos_fault_campaign.py [--runs 12] [--brokers
builtin,kafka3] [--volume 1000000] [--count 3000]``. Prints one line per run, then the
runs, kills, records and anomalies per broker; exit status 1 if any run was not exact.
Logs of inexact runs are kept.
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tests" / "streams" / "runtime"))

from apache_kafka import KafkaCluster  # noqa: E402
from brokerproc import BrokerProcess  # noqa: E402
from eos_campaign import KINDS, PHASES, STATEFUL_KINDS, Broker, Case, CaseRun, Outcome  # noqa: E402


@contextmanager
def builtin_broker(root: pathlib.Path) -> Iterator[Broker]:
    broker = BrokerProcess(root / "broker" / "data", "--fsync", "never").start()

    def kill_one() -> None:
        broker.kill()
        broker.start()

    try:
        yield Broker("builtin", broker.bootstrap, [broker.bootstrap], 1, kill_one)
    finally:
        broker.kill()


@contextmanager
def kafka_three(root: pathlib.Path) -> Iterator[Broker]:
    cluster = KafkaCluster(root / "kafka3", size=3).start()

    def kill_one() -> None:
        node = cluster.nodes[1]
        node.kill()
        cluster.restart(node.node_id)

    try:
        yield Broker("kafka3", cluster.bootstrap, [n.bootstrap for n in cluster.nodes], 3, kill_one)
    finally:
        cluster.stop(grace=0)


def cases(runs: int, count: int, volume: int, seed: int) -> list[Case]:
    """The first run is the stateless kind at ``volume`` (if any); the rest drawn."""
    rng = random.Random(seed)
    out = []
    if volume:
        out.append(Case("stateless", "end_txn", "same", count=volume, per_second=40_000, share=0.3))
    while len(out) < runs:
        kind = rng.choice(KINDS)
        phases = PHASES if kind in STATEFUL_KINDS else PHASES[:-1]
        out.append(
            Case(
                kind,
                rng.choice(phases),
                rng.choice(("same", "emptied")),
                broker_kill=rng.random() < 0.25,
                count=count,
            )
        )
    return out


def report(outcome: Outcome, keep: pathlib.Path) -> None:
    print(f"  {outcome.line()}", flush=True)
    if not outcome.verdict.exact:
        path = keep / f"{outcome.case.name}.log"
        path.write_text(outcome.log)
        print(f"    log kept in {path}", flush=True)


async def campaign(broker: Broker, runs: list[Case], root: pathlib.Path) -> list[Outcome]:
    outcomes = []
    for i, case in enumerate(runs):
        try:
            outcome = await CaseRun(case, broker, root, f"{broker.name}{i}").run(wait=300)
        except AssertionError as error:
            print(f"  {case.name}: did not finish: {str(error)[:2000]}", flush=True)
            continue
        outcomes.append(outcome)
        report(outcome, root)
    return outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=12, help="runs per broker")
    parser.add_argument("--brokers", default="builtin,kafka3")
    parser.add_argument("--volume", type=int, default=1_000_000)
    parser.add_argument("--count", type=int, default=3_000, help="input records per run")
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument(
        "--case",
        action="append",
        default=[],
        help="run this case instead of drawn ones: kind:phase:restart[:broker], repeatable",
    )
    args = parser.parse_args()
    runs = cases(args.runs, args.count, args.volume, args.seed)
    if args.case:
        runs = []
        for spec in args.case:
            kind, phase, restart = spec.split(":")[:3]
            runs.append(
                Case(kind, phase, restart, broker_kill=spec.endswith(":broker"), count=args.count)
            )
    failed = False
    for name in args.brokers.split(","):
        root = pathlib.Path(tempfile.mkdtemp(prefix=f"eos-campaign-{name}-"))
        started = time.monotonic()
        print(f"{name}: {len(runs)} runs", flush=True)
        with (builtin_broker if name == "builtin" else kafka_three)(root) as broker:
            outcomes = asyncio.run(campaign(broker, runs, root))
        kills = sum(len(o.kills) for o in outcomes)
        records = sum(o.records_in for o in outcomes)
        anomalies = sum(o.verdict.anomalies() for o in outcomes)
        inexact = [o.case.name for o in outcomes if not o.verdict.exact]
        print(
            f"{name}: {len(outcomes)} of {len(runs)} runs finished, {kills} kills, "
            f"{records} input records, {anomalies} anomalies in {len(inexact)} runs "
            f"{inexact}; {time.monotonic() - started:.0f} s",
            flush=True,
        )
        if inexact or len(outcomes) < len(runs):
            failed = True
            print(f"  logs in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
