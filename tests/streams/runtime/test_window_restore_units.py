"""A windowed aggregation in final-results mode, reopened through the runtime's restore
path against the real broker: its processors start only once the changelog is
restored, so they see the stream time and the pending windows the changelog holds.

The changelog is what a first run of the same task wrote (its stores log every
change); the reopened task restores it from the broker with the runtime's own
changelog reader and restorer, into real RocksDB stores. Every final result must then
come out exactly once across both runs: none lost, none repeated.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from rtprocs import Cluster, create_topics

from headrace.dsl import Serdes, StreamsBuilder, TimeWindows, Windowed, materialized
from headrace.streams import (
    ConsumedRecord,
    ProducedRecord,
    StreamsConfig,
    TaskExecutor,
    Topology,
)
from headrace.streams.runtime import AppSettings
from headrace.streams.runtime._aiokafka import AiokafkaChangelogReader
from headrace.streams.runtime._metrics import AppMetrics
from headrace.streams.runtime._partition_groups import changelog_topics
from headrace.streams.runtime._restore import Restorer
from headrace.streams.runtime._tasks import RuntimeTask, TaskManager

pytestmark = pytest.mark.slow

IN, OUT = "wr-views", "wr-counts"
MINUTE = 60_000
IDLE = 2_000
T0 = 1_700_000_040_000  # on a minute boundary

Changelog = dict[str, list[tuple[bytes, bytes | None]]]
"""Changelog records by topic, in order."""


def _report(window: Windowed[str], n: int) -> tuple[str, str]:
    return window.key, f"{(window.window.start - T0) // MINUTE}:{n}"


def topology() -> Topology:
    """Views per key and minute, one final count per window (no grace), closed by idle
    time too."""
    builder = StreamsBuilder()
    (
        builder.stream(IN, key_serde=Serdes.string(), value_serde=Serdes.string())
        .group_by_key()
        .windowed_by(TimeWindows.of_size(MINUTE).grace(0))
        .emit_final(idle_close=IDLE)
        .count(materialized=materialized("counts"))
        .to_stream()
        .map(_report)
        .to(OUT, key_serde=Serdes.string(), value_serde=Serdes.string())
    )
    return builder.build()


_offsets = itertools.count()


def _views(*rows: tuple[str, int]) -> list[ConsumedRecord]:
    """Consumed records of topic IN, partition 0: (key, ms after T0)."""
    return [(IN, 0, next(_offsets), T0 + at, k.encode(), b"v", ()) for k, at in rows]


class FirstRun:
    """The task as a first instance runs it: what it emits, and the changelog it writes."""

    def __init__(self, app: str, root: Path) -> None:
        self.task = TaskExecutor(topology(), 0, 0, {"application_id": app}, state_dir=root)
        self.task.init()
        self.finals: list[tuple[str, str]] = []

    def run(self, records: list[ConsumedRecord]) -> Changelog:
        """Process ``records``, flush, and return the changelog records written (per
        topic, in order); the final results go to ``finals``."""
        self.task.process(records)
        self.task.flush()
        return _split(self.task.drain(), self.finals)


def _split(produced: list[ProducedRecord], finals: list[tuple[str, str]]) -> Changelog:
    logs: Changelog = {}
    for topic, key, value, *_rest in produced:
        if topic == OUT:
            assert key is not None and value is not None
            finals.append((key.decode(), value.decode()))
        else:
            assert key is not None
            logs.setdefault(topic, []).append((key, value))
    return logs


async def _write(bootstrap: str, logs: Changelog) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for topic, records in logs.items():
            for key, value in records:
                await producer.send(topic, value, key=key, partition=0)
        await producer.flush()
    finally:
        await producer.stop()


class Reopened:
    """The runtime's way back for task 0_0 on ``state_dir``: open (stores only), restore
    from the broker, start."""

    def __init__(self, app: str, bootstrap: str, state_dir: Path) -> None:
        self.app, self.state_dir = app, state_dir
        self.settings = AppSettings.load(
            env={}, application_id=app, bootstrap_servers=bootstrap, state_dir=state_dir
        )
        self.now = T0 + 10 * MINUTE  # the wall clock of the second run
        self.tasks = TaskManager(
            topology(),
            StreamsConfig(application_id=app, state_dir=state_dir),
            state_dir,
            {0: (IN,)},
            changelog_topics(topology(), app),
            lambda topic: 1,
            lambda: self.now,
        )

    async def open(self) -> RuntimeTask:
        reader = AiokafkaChangelogReader(self.settings)
        await reader.start()
        try:
            restorer = Restorer(reader, AppMetrics(self.app), 500)
            (task,) = self.tasks.open([(IN, 0)])
            done = await restorer.add(task)
            deadline = time.monotonic() + 20
            while not done:
                assert time.monotonic() < deadline, "restore did not finish"
                done = bool(await restorer.step(100))
            assert task.running
            return task
        finally:
            await reader.stop()


def _emit(task: RuntimeTask, finals: list[tuple[str, str]]) -> None:
    task.executor.flush()
    _split(task.executor.drain(), finals)


async def _topics(bootstrap: str, app: str) -> None:
    logs = [t for stores in changelog_topics(topology(), app).values() for t in stores.values()]
    assert len(logs) == 2  # the counts and the stream time final-results mode keeps
    await create_topics(bootstrap, IN, OUT, *logs, partitions=1)


async def test_restored_from_the_changelog_alone_the_last_windows_close_on_idle_time(
    cluster: Cluster, tmp_path: Path
) -> None:
    """An emptied state directory: everything comes from the changelog. The windows the
    first run left open close on idle time, once; those it emitted stay emitted."""
    app = "wr-empty"
    await _topics(cluster.bootstrap, app)
    first = FirstRun(app, tmp_path / "first")
    await _write(cluster.bootstrap, first.run(_views(("a", 10_000), ("b", 20_000), ("a", 65_000))))
    assert first.finals == [("a", "0:1"), ("b", "0:1")]  # minute 0 closed at 60 s

    again = Reopened(app, cluster.bootstrap, tmp_path / "second")
    task = await again.open()
    finals = list(first.finals)
    # Quiet input: after the idle time, stream time is taken to have moved on that much
    # since the last record (at 65 s); minute 1 closes once it passes 120 s.
    again.now += MINUTE
    task.executor.punctuate_wall_clock(again.now)
    _emit(task, finals)
    again.now += MINUTE
    task.executor.punctuate_wall_clock(again.now)
    _emit(task, finals)
    task.close()
    assert finals == [("a", "0:1"), ("b", "0:1"), ("a", "1:1")]


async def test_restored_from_a_checkpoint_and_the_tail_emits_each_window_once(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Local stores as of an older point (a checkpoint) plus the changelog written since:
    the windows closed in that tail are not emitted again, and the windows opened in it
    are not lost."""
    app = "wr-tail"
    await _topics(cluster.bootstrap, app)
    first = FirstRun(app, tmp_path / "first")
    head = first.run(_views(("a", 10_000), ("b", 20_000)))
    await _write(cluster.bootstrap, head)
    # The second instance takes the head and checkpoints it, as a clean close would.
    state = tmp_path / "second"
    again = Reopened(app, cluster.bootstrap, state)
    task = await again.open()
    task.executor.flush()
    task.write_checkpoint()
    task.close()
    assert first.finals == []

    # The first run goes on: minute 0 closes (a, b) and minute 1 opens (a, c).
    tail = first.run(_views(("a", 61_000), ("c", 70_000)))
    await _write(cluster.bootstrap, tail)
    assert first.finals == [("a", "0:1"), ("b", "0:1")]

    again = Reopened(app, cluster.bootstrap, state)
    task = await again.open()
    assert task.restored_records == sum(map(len, tail.values()))  # only the tail
    finals = list(first.finals)
    records = _views(("d", 185_000))  # minute 3: minutes 1 and 2 close
    out = task.process((IN, 0), records)
    _split(out, finals)
    _emit(task, finals)
    task.close()
    assert sorted(finals) == [("a", "0:1"), ("a", "1:1"), ("b", "0:1"), ("c", "1:1")]
