"""Restoring a store from its changelog: records a second through the runtime's restorer.

One run starts the built-in broker (a subprocess), writes a changelog of ``--records``
records (10,000,000: distinct keys ``key-N``, 8-byte values, one partition, as a
key-value store's changelog holds them) with librdkafka, then restores a RocksDB
key-value store (the default stack: metered, cached, changelogged) from it exactly as
an application does: the runtime's changelog reader (aiokafka, the application's fetch
sizes) and ``Restorer``, step after step until the task is restored, then the task's
commit (``flush``), which makes the restored state durable. The clock (wall, and the CPU time of this process: the steadier figure
on a shared machine, RocksDB's background threads included) covers adding the task (end offsets, seek), every step and that flush. Afterwards the store is
checked: its key estimate and a sample of keys read back. The reader's polls are timed
apart (wall and CPU), so waiting for fetches shows as poll wall time beyond poll CPU
time, next to the same gap elsewhere (which is only the machine's load).

Run: ``python benchmarks/restore_rate.py [--records N] [--max-records N] [--profile FILE]``.
Goal: at least 500,000 records a second.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from broker_throughput import headrace_broker

from headrace.dsl import Serdes, StreamsBuilder, materialized
from headrace.streams import TaskExecutor
from headrace.streams.runtime import AppSettings
from headrace.streams.runtime._aiokafka import AiokafkaChangelogReader
from headrace.streams.runtime._metrics import AppMetrics
from headrace.streams.runtime._restore import Restorer
from headrace.streams.runtime._tasks import RuntimeTask

CHANGELOG = "bench-state-changelog"


def write_changelog(bootstrap: str, records: int) -> float:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(CHANGELOG, 1, 1, config={"cleanup.policy": "compact"})
    for future in admin.create_topics([topic]).values():
        future.result(30)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 2_000_000,
            "compression.type": "none",
        }
    )
    started = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(CHANGELOG, i.to_bytes(8, "big"), b"key-%d" % i, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(300)
    return time.perf_counter() - started


def build() -> Any:
    builder = StreamsBuilder()
    builder.stream(
        "input", key_serde=Serdes.string(), value_serde=Serdes.long()
    ).group_by_key().reduce(lambda a, b: a + b, materialized=materialized("state"))
    return builder.build()


class TimedReader(AiokafkaChangelogReader):
    """The runtime's changelog reader, timing its polls: the wall time spent in them
    beyond their CPU time is waiting, for a fetch round trip or for a core."""

    poll_wall = 0.0
    poll_cpu = 0.0

    async def poll(
        self, timeout_ms: int, max_records: int
    ) -> dict[tuple[str, int], list[tuple[int, bytes, bytes | None, int]]]:
        started, cpu_started = time.perf_counter(), time.thread_time()
        try:
            return await super().poll(timeout_ms, max_records)
        finally:
            self.poll_wall += time.perf_counter() - started
            self.poll_cpu += time.thread_time() - cpu_started


async def restore(
    bootstrap: str, state_dir: pathlib.Path, max_records: int
) -> tuple[int, float, float]:
    settings = AppSettings(application_id="bench", bootstrap_servers=bootstrap)
    executor = TaskExecutor(build(), 0, 0, {"application_id": "bench"}, state_dir=state_dir)
    executor.open_stores()  # the restorer starts it once restored
    tp = (CHANGELOG, 0)
    task = RuntimeTask("0_0", executor, (), {"state": tp}, state_dir, {tp: None})
    reader = TimedReader(settings)
    await reader.start()
    try:
        restorer = Restorer(reader, AppMetrics("bench"), max_records)
        started, cpu_started = time.perf_counter(), time.process_time()
        thread_started = time.thread_time()
        done = await restorer.add(task)
        while not done:
            done = bool(await restorer.step(100))
        executor.flush()
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
        thread = time.thread_time() - thread_started
        print(
            f"in polls: {reader.poll_wall:.1f} s wall, {reader.poll_cpu:.1f} s CPU; "
            f"elsewhere: {elapsed - reader.poll_wall:.1f} s wall, "
            f"{thread - reader.poll_cpu:.1f} s CPU (main thread)",
            flush=True,
        )
    finally:
        await reader.stop()
    store = executor.stores["state"]
    for i in range(0, task.restored_records, max(1, task.restored_records // 1000)):
        assert store.get(f"key-{i}") == i, i
    executor.close()
    return task.restored_records, elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument(
        "--max-records", type=int, default=AppSettings.model_fields["max_poll_records"].default
    )
    parser.add_argument("--profile", help="profile the restore into FILE")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="headrace-restore-") as tmp,
        headrace_broker("never") as bootstrap,
    ):
        wrote = write_changelog(bootstrap, args.records)
        print(f"changelog of {args.records:,} records written in {wrote:.1f} s", flush=True)
        state_dir = pathlib.Path(tmp) / "state"
        if args.profile:
            import cProfile

            profiler = cProfile.Profile()
            restored, elapsed, cpu = profiler.runcall(
                asyncio.run, restore(bootstrap, state_dir, args.max_records)
            )
            profiler.dump_stats(args.profile)
        else:
            restored, elapsed, cpu = asyncio.run(restore(bootstrap, state_dir, args.max_records))
    assert restored == args.records, (restored, args.records)
    print(
        f"restored {restored:,} records in {elapsed:.1f} s: {restored / elapsed:,.0f} records/s "
        f"wall, {restored / cpu:,.0f} per CPU second of this process (goal 500,000); "
        f"load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
