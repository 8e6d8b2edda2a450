"""What an exactly-once commit waits for, step by step, on the built-in broker.

One transactional producer (aiokafka, as the runtime's) runs transactions one after
another: each sends ``--records`` records over the 4 partitions of an output topic,
then commits with the consumed offsets of one input partition, the way the runtime's
commit does (``streams/runtime/_commit.py``), in one of two orders:

- ``sequential``: wait for the records' acknowledgements, then AddOffsetsToTxn and
  TxnOffsetCommit (``send_offsets_to_transaction``), then EndTxn: the order before;
- ``overlapped``: AddOffsetsToTxn asked for as the transaction gets its first records
  (``add_group_early``), TxnOffsetCommit sent beside the wait for the acknowledgements,
  then EndTxn: the order now.

Each broker given (``--python``: the interpreter whose installed headrace runs it, so two
trees can be set side by side) is started with fsync on, and both orders run against
it, alternating in blocks. Reported per broker and order: the commit D (from the end of
the sends until EndTxn answered), and its two parts, the flush (plus offsets) and EndTxn,
p50 / p99 in milliseconds.

Run: ``.venv/bin/python benchmarks/eos_commit_steps.py [--commits 300] [--records 50]
[--python /path/to/other/.venv/bin/python]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from typing import Any

from broker_throughput import headrace_broker

ORDERS = ("sequential", "overlapped")
OUTPUT, INPUT, GROUP = "steps-out", "steps-in", "steps-app"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def create_topics(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(OUTPUT, 4, 1), NewTopic(INPUT, 1, 1)])
    for future in futures.values():
        future.result(30)


async def commit_once(
    producer: Any, order: str, records: int, offset: int
) -> tuple[float, float, float]:
    """One transaction; returns (D, flush and offsets, EndTxn) in seconds."""
    from aiokafka import TopicPartition

    from headrace.streams.runtime._aiokafka_internals import add_group_early

    await producer.begin_transaction()
    sent = [
        await producer.send(OUTPUT, b"v" * 100, key=b"k%d" % i, partition=i % 4)
        for i in range(records)
    ]
    offsets = {TopicPartition(INPUT, 0): offset}
    if order == "overlapped":
        add_group_early(producer, GROUP)
    started = time.perf_counter()
    if order == "sequential":
        await asyncio.gather(*sent)
        await producer.send_offsets_to_transaction(offsets, GROUP)
    else:
        await asyncio.gather(*sent, producer.send_offsets_to_transaction(offsets, GROUP))
    flushed = time.perf_counter()
    await producer.commit_transaction()
    ended = time.perf_counter()
    return ended - started, flushed - started, ended - flushed


async def run_broker(bootstrap: str, commits: int, records: int) -> dict[str, list[Any]]:
    from aiokafka import AIOKafkaProducer

    create_topics(bootstrap)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id="steps", linger_ms=0, acks="all"
    )
    await producer.start()
    took: dict[str, list[Any]] = {order: [] for order in ORDERS}
    try:
        for order in ORDERS:  # warm up both paths
            for _ in range(10):
                await commit_once(producer, order, records, 0)
        block = 25
        for n in range(commits // block):
            for order in ORDERS if n % 2 == 0 else ORDERS[::-1]:
                for _ in range(block):
                    took[order].append(await commit_once(producer, order, records, n))
    finally:
        await producer.stop()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=300, help="per order and broker")
    parser.add_argument("--records", type=int, default=50, help="records per transaction")
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        help="interpreter whose headrace runs a broker (repeatable; default: this one)",
    )
    args = parser.parse_args()
    for python in args.python or [sys.executable]:
        with headrace_broker("always", python=python) as bootstrap:
            took = asyncio.run(run_broker(bootstrap, args.commits, args.records))
        load = os.getloadavg()[0]
        for order in ORDERS:
            columns = list(zip(*took[order], strict=True))
            d, flush, end = ([x * 1000 for x in column] for column in columns)
            print(
                f"broker {python}: {order:<10} D p50 {percentile(d, 0.5):6.1f} "
                f"p99 {percentile(d, 0.99):6.1f}  flush+offsets p50 "
                f"{percentile(flush, 0.5):6.1f} p99 {percentile(flush, 0.99):6.1f}  "
                f"EndTxn p50 {percentile(end, 0.5):6.1f} p99 {percentile(end, 0.99):6.1f} ms "
                f"({len(d)} commits, load {load:.1f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
