"""Fail-over with and without standby replicas: how long a killed instance's tasks take
to run again elsewhere.

Two headrace instances (each ``headrace run`` in its own process) count records per key
in a RocksDB store with a changelog (no cache: one changelog record per input record),
on the built-in broker (a subprocess, 4 partitions). Once the input is consumed (and,
with standbys, every standby has checkpointed the end of its changelog), one instance
is killed with SIGKILL. The survivor's JSON logs give the timeline:

- *detection*: from the kill until the survivor opens the first moved task (the
  group's session timeout, 6 s here, the same for both runs);
- *restore*: from then until every moved task runs again, and how many changelog
  records that took.

Run: ``.venv/bin/python benchmarks/failover_standby.py [--records N] [--keys N]``.
The same file is the topology the instances run (``topology``).
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
from datetime import UTC, datetime
from typing import Any

from bench_broker import broker_process

ROOT = pathlib.Path(__file__).resolve().parent.parent
PARTITIONS = 4
SESSION_TIMEOUT_MS = 6000


def topology() -> Any:
    """Counts per key, one changelog record per input record."""
    from headrace.state import Stores
    from headrace.streams import BatchProcessor, Rec, Topology

    class Count(BatchProcessor):
        def init(self, context: Any) -> None:
            super().init(context)
            self.store = context.get_state_store("counts")

        def process_batch(self, batch: list[Rec]) -> None:
            store = self.store
            for k, _v, _ts, _h, _o in batch:
                store.put(k, str(int(store.get(k) or b"0") + 1).encode())

    return (
        Topology()
        .add_source("in", os.environ["FAILOVER_INPUT"])
        .add_processor("count", Count, "in")
        .add_state_store(Stores.key_value_store("counts"), "count")
    )


class Run:
    """One fail-over: two instances, input consumed, one killed."""

    def __init__(
        self, bootstrap: str, workdir: pathlib.Path, standbys: int, records: int, keys: int
    ) -> None:
        self.bootstrap = bootstrap
        self.standbys = standbys
        self.app_id = f"failover-standby{standbys}"
        self.topic = f"failover-in-{standbys}"
        self.workdir = workdir
        self.records = records
        self.keys = keys
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def produce(self) -> None:
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for future in admin.create_topics([NewTopic(self.topic, PARTITIONS, 1)]).values():
            future.result()
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "linger.ms": 20,
                "batch.size": 1_000_000,
                "queue.buffering.max.messages": 1_000_000,
            }
        )
        for i in range(self.records):
            while True:
                try:
                    producer.produce(self.topic, b"x", f"key-{i % self.keys}".encode())
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.flush(120)

    def start(self, name: str) -> None:
        env = {
            **os.environ,
            "FAILOVER_INPUT": self.topic,
            "PYTHONPATH": str(ROOT),
            "HEADRACE_SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS),
            "HEADRACE_HEARTBEAT_INTERVAL_MS": "500",
        }
        log = open(self.workdir / f"{self.app_id}-{name}.log", "wb")  # noqa: SIM115 - the child's
        self.procs[name] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "headrace",
                "run",
                f"{__file__}:topology",
                "--application-id",
                self.app_id,
                "--bootstrap-servers",
                self.bootstrap,
                "--state-dir",
                str(self.workdir / f"{self.app_id}-{name}"),
                "--log-format",
                "json",
                "--num-standby-replicas",
                str(self.standbys),
                "--status-interval",
                "0.5",
            ],
            stdout=log,
            stderr=log,
            env=env,
            cwd=ROOT,
        )
        log.close()

    def log(self, name: str) -> list[dict[str, Any]]:
        entries = []
        for line in (self.workdir / f"{self.app_id}-{name}.log").read_text().splitlines():
            if line.startswith("{"):
                entries.append(json.loads(line))
        return entries

    def status(self, name: str) -> str:
        text = (self.workdir / f"{self.app_id}-{name}.log").read_text()
        lines = [line for line in text.splitlines() if line.startswith("[status]")]
        return lines[-1] if lines else ""

    def consumed(self) -> int:
        total = 0
        for name in self.procs:
            status = self.status(name)
            if "consumed=" in status:
                total += int(status.split("consumed=")[1].split()[0])
        return total

    def wait(self, what: str, done: Any, limit: float = 300) -> None:
        deadline = time.monotonic() + limit
        while not done():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: not within {limit}s")
            time.sleep(0.2)

    def tasks(self, name: str, kind: str = "tasks") -> list[str]:
        status = self.status(name)
        if f" {kind}=" not in status:
            return []
        return [t for t in status.split(f" {kind}=")[1].split()[0].split(",") if t != "-"]

    def balanced(self) -> bool:
        a, b = self.tasks("a"), self.tasks("b")
        return bool(a) and bool(b) and sorted(a + b) == [f"0_{p}" for p in range(PARTITIONS)]

    def standbys_caught_up(self) -> bool:
        from confluent_kafka import Consumer, TopicPartition

        from headrace.state import TaskCheckpoint

        changelog = f"{self.app_id}-counts-changelog"
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "failover-watch"})
        try:
            ends = {
                p: consumer.get_watermark_offsets(TopicPartition(changelog, p), timeout=10)[1]
                for p in range(PARTITIONS)
            }
        finally:
            consumer.close()
        for name in self.procs:
            standbys = self.tasks(name, "standby")
            if not standbys:
                return False
            for task in standbys:
                directory = self.workdir / f"{self.app_id}-{name}" / self.app_id / task
                partition = int(task.split("_")[1])
                if (
                    TaskCheckpoint(directory).read_checkpoint().get((changelog, partition))
                    != ends[partition]
                ):
                    return False
        return True

    def fail_over(self) -> dict[str, Any]:
        self.produce()
        for name in ("a", "b"):
            self.start(name)
        self.wait("input consumed", lambda: self.consumed() >= self.records)
        self.wait("both instances running tasks", self.balanced)
        if self.standbys:
            self.wait("standbys caught up", self.standbys_caught_up)
        moved = self.tasks("a")
        killed_at = time.time()
        self.procs["a"].send_signal(signal.SIGKILL)
        self.procs["a"].wait(10)
        del self.procs["a"]

        def restored() -> list[dict[str, Any]]:
            return [
                e
                for e in self.log("b")
                if e["ts"] >= _iso(killed_at)
                and any(e["msg"].startswith(f"task {t} restored ") for t in moved)
            ]

        self.wait("moved tasks running", lambda: len(restored()) >= len(moved))
        # The first moved task opened: from here the survivor rebuilds or takes over state.
        opened = next(
            e
            for e in self.log("b")
            if e["ts"] >= _iso(killed_at) and any(e["msg"].startswith(f"task {t} ") for t in moved)
        )
        done = restored()
        records = sum(int(e["msg"].split(" restored ")[1].split()[0]) for e in done)
        last = max(_epoch(e["ts"]) for e in done)
        self.procs["b"].send_signal(signal.SIGTERM)
        self.procs["b"].wait(60)
        return {
            "standbys": self.standbys,
            "moved": moved,
            "restored_records": records,
            "detection_s": _epoch(opened["ts"]) - killed_at,
            "restore_s": last - _epoch(opened["ts"]),
        }

    def stop(self) -> None:
        for proc in self.procs.values():
            proc.kill()
            proc.wait(10)


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + f".{int(epoch % 1 * 1000):03d}Z"


def _epoch(iso: str) -> float:
    return datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=500_000)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="headrace-failover-") as tmp:
        workdir = pathlib.Path(tmp)
        with broker_process(workdir) as bootstrap:
            for standbys in (0, 1):
                run = Run(bootstrap, workdir, standbys, args.records, args.keys)
                try:
                    results.append(run.fail_over())
                finally:
                    run.stop()
                print(json.dumps(results[-1]), flush=True)
    print(f"\n{args.records:,} records, {args.keys:,} keys, {PARTITIONS} partitions, 2 instances")
    print("| standby replicas | restored records | detection (s) | restore (s) |")
    print("|-----------------:|-----------------:|--------------:|------------:|")
    for r in results:
        print(
            f"| {r['standbys']:>16} | {r['restored_records']:>16,} | {r['detection_s']:>13.1f} "
            f"| {r['restore_s']:>11.2f} |"
        )


if __name__ == "__main__":
    main()
