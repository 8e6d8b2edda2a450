"""How long consumption stops while a group changes: classic eager, classic cooperative
and the consumer protocol (KIP-848), in one run against one built-in broker.

    .venv/bin/python benchmarks/group_rebalance.py [--rate 1000] [--rounds 1]
        [--heartbeat-ms 1000]

A 12-partition topic takes a steady load (``--rate`` records a second, round the
partitions). For each protocol a fresh group of two confluent-kafka members (each in
its own process, committing after each batch) settles, a third member joins, the group
settles, the first member leaves, and the group settles again. From the wall time of
every record consumed, two figures over that stretch:

- group gap: the longest time no member of the group consumed anything;
- partition gap: the longest time one partition was not consumed (the moved ones);

and, as the floor set by the machine and the load, the group gap of the settled group
just before the join ("steady").

Protocols: classic with ``partition.assignment.strategy=range`` (eager: everyone stops
at each rebalance), classic with ``cooperative-sticky`` (incremental, two rebalances per
change), and ``group.protocol=consumer`` (the broker's ``uniform`` assignor). Heartbeats
are ``--heartbeat-ms`` for all three: the classic members' ``heartbeat.interval.ms`` and
the broker's ``group.consumer.heartbeat.interval.ms``.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from tempfile import mkdtemp

import confluent_kafka as ck
from broker_throughput import headrace_broker
from confluent_kafka.admin import AdminClient, NewTopic

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))
from kip848_harness import Member, owned_exactly, wait_until  # noqa: E402

MEMBER = TESTS / "conformance" / "kip848_member.py"
PARTITIONS = 12
SETTLE_S = 3.0

PROTOCOLS: dict[str, tuple[str, ...]] = {
    "classic eager (range)": ("--protocol", "classic", "--strategy", "range"),
    "classic cooperative-sticky": ("--protocol", "classic", "--strategy", "cooperative-sticky"),
    "consumer (KIP-848)": ("--protocol", "consumer"),
}


class Load:
    def __init__(self, bootstrap: str, topic: str, rate: int) -> None:
        self._producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
        self._topic, self._rate = topic, rate
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        n, started = 0, time.monotonic()
        while not self._stop.is_set():
            self._producer.produce(self._topic, b"x" * 100, partition=n % PARTITIONS)
            self._producer.poll(0)
            n += 1
            ahead = n / self._rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
        self._producer.flush(15)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def gaps(members: Sequence[Member], since: float, until: float) -> tuple[float, float]:
    """(group gap, partition gap) in seconds over [since, until]."""
    times: list[tuple[float, int]] = sorted(
        (t, p) for m in members for t, p in list(m.consume_times) if since <= t <= until
    )
    group_gap, last = 0.0, since
    last_of: dict[int, float] = {}
    partition_gap = 0.0
    for t, p in times:
        group_gap = max(group_gap, t - last)
        partition_gap = max(partition_gap, t - last_of.get(p, since))
        last, last_of[p] = t, t
    group_gap = max(group_gap, until - last)
    return group_gap, partition_gap


def one_round(bootstrap: str, options: Sequence[str], rate: int) -> tuple[float, float, float]:
    """One protocol: two members, a third joins, the first leaves; the gaps (group,
    partition, and the steady group gap before the join)."""
    topic = f"rebalance-{time.monotonic_ns()}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(15)
    load = Load(bootstrap, topic, rate)
    group = f"g-{time.monotonic_ns()}"
    log_dir = Path(mkdtemp(prefix="headrace-rebalance-"))

    def start(member: str) -> Member:
        args = [sys.executable, str(MEMBER), bootstrap, topic, group, member, *options]
        return Member(member, args, log_dir)

    first, second = start("m1"), start("m2")
    members = [first, second]
    try:
        wait_until(lambda: owned_exactly([first, second], PARTITIONS), 60, "two members", members)
        steady_since = time.time()
        time.sleep(SETTLE_S)
        since = time.time()
        third = start("m3")
        members.append(third)
        wait_until(lambda: owned_exactly(members, PARTITIONS), 60, "three members", members)
        time.sleep(SETTLE_S)
        first.leave()
        wait_until(lambda: owned_exactly([second, third], PARTITIONS), 60, "after leave", members)
        time.sleep(SETTLE_S)
        until = time.time()
        steady, _ = gaps(members, steady_since, since)
        return (*gaps(members, since, until), steady)
    finally:
        load.stop()
        for m in members:
            m.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=1000, help="records a second")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--heartbeat-ms", type=int, default=1000)
    args = parser.parse_args()
    rows: dict[str, list[tuple[float, float, float]]] = {name: [] for name in PROTOCOLS}
    with headrace_broker(
        "always",
        "--group-initial-rebalance-delay-ms",
        "0",
        "--group-consumer-heartbeat-interval-ms",
        str(args.heartbeat_ms),
    ) as bootstrap:
        for round_ in range(args.rounds):
            for name, options in PROTOCOLS.items():
                heartbeat = ("--heartbeat-ms", str(args.heartbeat_ms))
                chosen = (*options, *heartbeat) if name.startswith("classic") else options
                result = one_round(bootstrap, chosen, args.rate)
                rows[name].append(result)
                print(
                    f"round {round_ + 1} {name}: group gap {result[0] * 1000:.0f} ms, "
                    f"partition gap {result[1] * 1000:.0f} ms, steady {result[2] * 1000:.0f} ms",
                    flush=True,
                )
    print("\n| protocol | group gap | partition gap | steady group gap |\n|---|---:|---:|---:|")
    for name, results in rows.items():
        worst = [max(r[i] for r in results) * 1000 for i in range(3)]
        print(f"| {name} | {worst[0]:.0f} ms | {worst[1]:.0f} ms | {worst[2]:.0f} ms |")


if __name__ == "__main__":
    main()
