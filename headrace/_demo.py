"""`headrace demo`: the whole pipeline on the embedded default.

Today: start the built-in broker in-process (unless ``--bootstrap-servers`` names one),
create a topic, produce a sample of page-view events, consume them back, and print what
happened. Each capability that lands adds its stage here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

PAGES = ("/", "/pricing", "/docs", "/blog", "/signup")
TOPIC = "page-views"


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    demo = subparsers.add_parser("demo", help="run the main job on the embedded broker")
    demo.add_argument("--bootstrap-servers", default=None,
                      help="use this broker instead of starting the built-in one")
    demo.add_argument("--events", type=int, default=10_000)
    demo.set_defaults(handler=lambda args: asyncio.run(run_demo(args)))


@contextlib.asynccontextmanager
async def _broker(bootstrap: str | None) -> AsyncIterator[str]:
    if bootstrap:
        yield bootstrap
        return
    from log_broker import Broker

    with tempfile.TemporaryDirectory(prefix="headrace-demo-") as data_dir:
        async with Broker(data_dir, num_partitions=3) as broker:
            print(f"[broker]   built-in broker on {broker.bootstrap_servers} (data: {data_dir})")
            yield broker.bootstrap_servers


async def run_demo(args: argparse.Namespace) -> int:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async with _broker(args.bootstrap_servers) as bootstrap:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            if TOPIC not in await admin.list_topics():
                await admin.create_topics([NewTopic(TOPIC, 3, 1)])
        finally:
            await admin.close()
        print(f"[topics]   {TOPIC} with 3 partitions")

        rng = random.Random(7)
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        await producer.start()
        sent: Counter[str] = Counter()
        started = time.perf_counter()
        try:
            batch = []
            for i in range(args.events):
                page = rng.choice(PAGES)
                user = f"user-{rng.randrange(100)}"
                event = {"user": user, "page": page, "ts": 1_700_000_000_000 + i * 10}
                batch.append(await producer.send(TOPIC, json.dumps(event).encode(),
                                                 key=user.encode()))
                sent[page] += 1
            await asyncio.gather(*batch)
        finally:
            await producer.stop()
        elapsed = time.perf_counter() - started
        print(f"[produce]  {args.events} page views acknowledged (acks=all, fsynced)"
              f" in {elapsed:.2f}s")

        consumer = AIOKafkaConsumer(TOPIC, bootstrap_servers=bootstrap,
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        seen: Counter[str] = Counter()
        per_partition: Counter[int] = Counter()
        try:
            while sum(seen.values()) < args.events:
                batches = await consumer.getmany(timeout_ms=2000)
                if not batches:
                    break
                for tp, records in batches.items():
                    per_partition[tp.partition] += len(records)
                    for record in records:
                        seen[json.loads(record.value)["page"]] += 1
        finally:
            await consumer.stop()
        print(f"[consume]  read back {sum(seen.values())} records; per partition:"
              f" {dict(sorted(per_partition.items()))}")
        print("[result]   views per page:")
        for page, count in seen.most_common():
            print(f"             {page:<10} {count:>6}")
        if seen != sent:
            print("[result]   MISMATCH between produced and consumed counts")
            return 1
        print("[result]   every acknowledged event was read back exactly once")
    return 0
