"""The page-views job through two SIGKILLs: ``headrace.examples.page_views`` under
exactly-once, killed once its windowed count has committed part of the views and
restarted on the same state directory (snapshot plus changelog tail), then killed again
and restarted on an emptied one (the whole changelog). A read_committed reader then
checks the final counts against the input: every window exactly once.

The views are made so that a task restored wrongly shows it. Event time only grows
(one input partition, so the counting task sees the views in that order and none is
late), and within each minute a page's views come together, one page after the other:
wherever a kill lands in a minute, the pages before it there get no further view in
that minute. Their windows wait in the restored stores alone, and must come out of
them once, when the minute closes. The last minute closes on idle time.

Used by ``test_eos_window_restore.py`` (small) and ``benchmarks/page_views_restore.py``
(300,000 views).
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from rtprocs import Instance

from headrace.examples import page_views
from headrace.streams import Topology

IDLE_CLOSE_MS = 2_000
"""The job's idle close: the last minute closes once the input has been quiet this long
plus the grace (10 s) beyond the last view's minute."""

TASK = "1_0"  # the counting task: sub-topology 1 reads the repartition topic
Window = tuple[str, str]  # (page, "HH:MM")


def topology() -> Topology:
    """``headrace.examples.page_views`` with a short idle close (what ``headrace run``
    runs here)."""
    return page_views.build(idle_close_ms=IDLE_CLOSE_MS).build()


def views(minutes: int, pages: int, per_page: int, seed: int = 7) -> list[tuple[str, str, int]]:
    """(user, page, timestamp) in time order: per minute, each page's ``per_page`` views
    together, pages in turn."""
    rng = random.Random(seed)
    per_minute = pages * per_page
    step = page_views.MINUTE / per_minute
    out = []
    for minute in range(minutes):
        for j in range(per_minute):
            page = f"/page-{j // per_page:03d}"
            at = page_views.T0 + minute * page_views.MINUTE + int(j * step)
            out.append((f"user-{rng.randrange(1000):03d}", page, at))
    return out


def minute_of(timestamp: int) -> str:
    start = timestamp - timestamp % page_views.MINUTE
    return datetime.fromtimestamp(start / 1000, UTC).strftime("%H:%M")


def reference(rows: list[tuple[str, str, int]]) -> Counter[Window]:
    """The final count of every window, computed from the input."""
    return Counter((page, minute_of(at)) for _user, page, at in rows)


@dataclass
class Finals:
    """What a read_committed reader of the output saw, per window in order."""

    seen: dict[Window, list[int]] = field(default_factory=lambda: defaultdict(list))
    records: int = 0

    def add(self, value: bytes) -> None:
        report = json.loads(value)
        self.seen[(report["page"], report["minute"])].append(report["views"])
        self.records += 1

    def problems(self, want: Counter[Window]) -> dict[str, list[Any]]:
        """Windows lost, repeated, or with a wrong count; none when all is exact."""
        return {
            "lost": sorted(w for w in want if not self.seen.get(w)),
            "repeated": sorted((w, c) for w, c in self.seen.items() if len(c) > 1),
            "wrong": sorted(
                (w, c, want.get(w)) for w, c in self.seen.items() if c and c[0] != want.get(w)
            ),
        }


async def create_topics(bootstrap: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = (page_views.VIEWS, page_views.PER_MINUTE)
        await admin.create_topics([NewTopic(t, 1, 1) for t in wanted if t not in existing])
    finally:
        await admin.close()


async def produce(bootstrap: str, rows: list[tuple[str, str, int]], per_second: float) -> None:
    """Send the views in order, about ``per_second`` of them a second (0: at once)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, enable_idempotence=True)
    await producer.start()
    started = time.monotonic()
    chunk = 500
    try:
        for i in range(0, len(rows), chunk):
            for user, page, at in rows[i : i + chunk]:
                value = json.dumps({"page": page, "user": user}).encode()
                await producer.send(page_views.VIEWS, value, key=user.encode(), timestamp_ms=at)
            if per_second:
                ahead = (i + chunk) / per_second - (time.monotonic() - started)
                if ahead > 0:
                    await asyncio.sleep(ahead)
        await producer.flush()
    finally:
        await producer.stop()


async def committed(bootstrap: str, group: str, topic: str) -> int:
    """How many records of ``topic`` ``group`` has committed, over its partitions."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
        return sum(meta.offset for tp, meta in offsets.items() if tp.topic == topic)
    finally:
        await admin.close()


async def read_finals(bootstrap: str, want: Counter[Window], wait: float) -> Finals:
    """Read the output read_committed until every window showed up (or ``wait`` seconds
    passed), then 2 s more, so that repeats after it show too."""
    finals = Finals()
    consumer = AIOKafkaConsumer(
        page_views.PER_MINUTE,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        enable_auto_commit=False,
    )
    await consumer.start()
    deadline = time.monotonic() + wait
    settle: float | None = None
    try:
        while time.monotonic() < (deadline if settle is None else settle):
            for records in (await consumer.getmany(timeout_ms=300, max_records=50_000)).values():
                for r in records:
                    finals.add(r.value)
            if settle is None and all(finals.seen.get(w) for w in want):
                settle = time.monotonic() + 2.0
    finally:
        await consumer.stop()
    return finals


@dataclass
class Job:
    """One instance of the page-views job on ``bootstrap``, killed at two points of its
    counting task's committed progress (fractions of the views)."""

    bootstrap: str
    root: Path
    app_id: str
    rows: list[tuple[str, str, int]]
    per_second: float
    kill_at: tuple[float, float] = (0.20, 0.45)
    instance: Instance | None = None
    timeline: list[str] = field(default_factory=list)
    # Where the instance is noted as soon as it starts (a test's ``instances`` fixture,
    # which kills what is left running whatever happens).
    started: list[Instance] = field(default_factory=list)

    @property
    def repartition(self) -> str:
        return f"{self.app_id}-views-by-page-repartition"

    def start(self) -> Instance:
        self.instance = Instance(
            f"{Path(__file__).resolve()}:topology",
            self.app_id,
            self.bootstrap,
            self.root / "state",
            self.app_id,
            # Snapshots often, so the first restart finds one well into the input.
            env={
                "HEADRACE_PROCESSING_GUARANTEE": "exactly_once_v2",
                "HEADRACE_SNAPSHOT_INTERVAL_MS": "500",
            },
        ).start()
        self.started.append(self.instance)
        return self.instance

    async def _kill_when_committed(self, fraction: float, wait: float = 120) -> None:
        want = int(len(self.rows) * fraction)
        deadline = time.monotonic() + wait
        while (done := await committed(self.bootstrap, self.app_id, self.repartition)) < want:
            assert time.monotonic() < deadline, f"only {done} of {want} views committed"
            await asyncio.sleep(0.05)
        assert self.instance is not None
        self.instance.kill()
        self.timeline.append(f"killed at {done} views committed")

    async def run(self, wait: float) -> tuple[Finals, Counter[Window]]:
        """Produce the views, kill and restart twice as the module docstring says, and
        return what a read_committed reader found with what it should have found."""
        await create_topics(self.bootstrap)
        want = reference(self.rows)
        instance = self.start()
        await asyncio.to_thread(instance.wait_for, "tasks=0_", 60)
        producing = asyncio.create_task(produce(self.bootstrap, self.rows, self.per_second))
        try:
            await self._kill_when_committed(self.kill_at[0])
            instance.start()  # the same state directory: snapshot plus changelog tail
            await self._kill_when_committed(self.kill_at[1])
            shutil.rmtree(instance.state_dir)  # nothing local: the whole changelog
            instance.start()
            await producing
        finally:
            producing.cancel()
        finals = await read_finals(self.bootstrap, want, wait)
        return finals, want

    def log(self) -> str:
        return self.instance.log() if self.instance is not None else ""

    def stop(self) -> int:
        return self.instance.stop() if self.instance is not None else 0
