"""The payments job of the exactly-once tests: input, a read_committed reader, the check.

Payments are ``(account, amount)`` drawn from a seeded generator, so the test knows the
exact running balance every account must show after each of its payments.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from rtprocs import Instance

ACCOUNTS = 1000


def payments(count: int, seed: int = 8, accounts: int = ACCOUNTS) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    return [(f"acct-{rng.randrange(accounts):04d}", rng.randint(-500, 1000)) for _ in range(count)]


def expected(records: list[tuple[str, int]]) -> dict[str, list[tuple[int, int]]]:
    """Per account, ``(balance, payments)`` after each of its payments, in order."""
    out: dict[str, list[tuple[int, int]]] = defaultdict(list)
    totals: dict[str, int] = defaultdict(int)
    for account, amount in records:
        totals[account] += amount
        out[account].append((totals[account], len(out[account]) + 1))
    return dict(out)


async def create_topics(bootstrap: str, *topics: str, partitions: int = 4) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(t, partitions, 1) for t in topics])
    finally:
        await admin.close()


async def produce(
    bootstrap: str,
    topic: str,
    records: list[tuple[str, int]],
    per_second: float | None = None,
    chunk: int = 500,
) -> None:
    """Send ``records`` in order (idempotent, so a broker restart neither loses nor
    doubles input), at about ``per_second`` when given."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=5, enable_idempotence=True, request_timeout_ms=60_000
    )
    await producer.start()
    started = time.monotonic()
    try:
        for i in range(0, len(records), chunk):
            for account, amount in records[i : i + chunk]:
                await producer.send(topic, str(amount).encode(), key=account.encode())
            if per_second:
                ahead = (i + chunk) / per_second - (time.monotonic() - started)
                if ahead > 0:
                    await asyncio.sleep(ahead)
        await producer.flush()
    finally:
        await producer.stop()


@dataclass
class Balances:
    """What a read_committed reader of the output saw, per account in order."""

    seen: dict[str, list[tuple[int, int]]] = field(default_factory=lambda: defaultdict(list))
    records: int = 0

    def add(self, key: bytes, value: bytes) -> None:
        balance, count = value.decode().split(",")
        self.seen[key.decode()].append((int(balance), int(count)))
        self.records += 1

    def reached(self, want: dict[str, list[tuple[int, int]]]) -> bool:
        return all(self.seen.get(a) and self.seen[a][-1][1] >= len(w) for a, w in want.items())

    def problems(self, want: dict[str, list[tuple[int, int]]]) -> list[str]:
        """Accounts whose balances differ from the exact running sums, described."""
        out = []
        for account, exact in sorted(want.items()):
            got = self.seen.get(account, [])
            if got != exact:
                counted_twice = sum(
                    1 for (_b, n), i in zip(got, range(1, len(got) + 1), strict=False) if n != i
                )
                out.append(
                    f"{account}: {len(got)} balances for {len(exact)} payments, final "
                    f"{got[-1] if got else None} vs {exact[-1]}, {counted_twice} out of step"
                )
        return out


async def read_committed(
    bootstrap: str,
    topic: str,
    want: dict[str, list[tuple[int, int]]],
    wait: float,
    into: Balances | None = None,
) -> Balances:
    """Read ``topic`` read_committed until every account reached its payment count (or
    ``wait`` seconds pass), then a little longer, so duplicates after it show too."""
    balances = into or Balances()
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        enable_auto_commit=False,
    )
    await consumer.start()
    deadline = time.monotonic() + wait
    settle: float | None = None
    try:
        while time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500, max_records=50_000)).values():
                for r in records:
                    balances.add(r.key, r.value)
            if settle is None and balances.reached(want):
                settle = time.monotonic() + 2.0
            if settle is not None and time.monotonic() >= settle:
                break
    finally:
        await consumer.stop()
    return balances


async def committed_values(bootstrap: str, topic: str) -> list[bytes]:
    """Every record a read_committed reader finds in partition 0 of ``topic``."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await consumer.start()
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    try:
        end = (await consumer.end_offsets([tp]))[tp]
        values: list[bytes] = []
        while await consumer.position(tp) < end:
            for records in (await consumer.getmany(timeout_ms=1000)).values():
                values.extend(r.value for r in records)
        return values
    finally:
        await consumer.stop()


@dataclass
class Job:
    """Two instances of the payments job, killed with SIGKILL and restarted while input
    flows; what it produced, read read_committed."""

    bootstrap: str
    root: Path
    name: str
    guarantee: str
    count: int
    per_second: float
    kills: int
    seed: int = 8
    commit_interval_ms: int | None = None  # None: the application's default
    instances: list[Instance] = field(default_factory=list)
    killed: int = 0

    @property
    def topics(self) -> tuple[str, str]:
        return f"pay-in-{self.name}", f"pay-out-{self.name}"

    def spawn(self, name: str) -> Instance:
        env = {"HEADRACE_PROCESSING_GUARANTEE": self.guarantee}
        instance = Instance(
            f"payments_{self.name}",
            f"payments_{self.name}",
            self.bootstrap,
            self.root / name,
            name,
            env=env,
            commit_interval_ms=self.commit_interval_ms,
        )
        self.instances.append(instance)
        return instance.start()

    async def kill_now_and_then(
        self, gaps: tuple[float, float], producing: asyncio.Task[None]
    ) -> None:
        """Kill a random instance ``kills`` times, ``gaps`` seconds apart (uniformly
        drawn), restarting it at once on its own state directory."""
        rng = random.Random(self.seed * 31)
        for _ in range(self.kills):
            await asyncio.sleep(rng.uniform(*gaps))
            victim = rng.choice(self.instances)
            victim.kill()
            self.killed += 1
            await asyncio.sleep(rng.uniform(0.0, 0.5))
            victim.start()

    async def run(
        self, gaps: tuple[float, float], wait: float
    ) -> tuple[Balances, dict[str, list[tuple[int, int]]]]:
        source, sink = self.topics
        await create_topics(self.bootstrap, source, sink)
        records = payments(self.count, self.seed)
        want = expected(records)
        self.spawn("a")
        self.spawn("b")
        await asyncio.to_thread(self.instances[0].wait_for, "tasks=0_", 60)
        producing = asyncio.create_task(produce(self.bootstrap, source, records, self.per_second))
        await self.kill_now_and_then(gaps, producing)
        await producing
        balances = await read_committed(self.bootstrap, sink, want, wait)
        return balances, want

    def stop(self) -> list[int]:
        return [instance.stop() for instance in self.instances]

    def logs(self) -> str:
        return "\n".join(instance.log() for instance in self.instances)
