"""A task's lifecycle: CREATED -> RESTORING -> RUNNING -> CLOSED (``streams/_lifecycle.py``).

Stores open first and take changelog records; processors are built and ``init``-ed only
at the start, on the restored stores; a task closed before that closes its stores only.
The runtime's side of it (open, restore, ``RuntimeTask.restored``) and the standby's
(never started; started once promoted and restored) run here too, without a broker.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from headrace.dsl import Serdes, StreamsBuilder, TimeWindows, Windowed, materialized
from headrace.state import InvalidStoreStateError, Stores
from headrace.streams import (
    BatchProcessor,
    IllegalStateTransition,
    ProcessingError,
    ProcessorContext,
    PunctuationType,
    Rec,
    StreamsConfig,
    TaskExecutor,
    TaskState,
    Topology,
)
from headrace.streams.runtime._partition_groups import changelog_topics
from headrace.streams.runtime._standby import apply_changelog
from headrace.streams.runtime._tasks import RuntimeTask, RuntimeTaskState, TaskManager

APP = "lifecycle"
EVENTS: list[tuple[str, Any]] = []


class Remember(BatchProcessor):
    """Notes its init (with what its store holds then, and the wall clock), its
    punctuations and its close in ``EVENTS``."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = context.get_state_store("kv")
        EVENTS.append(("init", (store.get(b"k"), context.current_system_time_ms())))
        context.schedule(1_000, PunctuationType.WALL_CLOCK_TIME, self._tick)

    def _tick(self, now: int) -> None:
        EVENTS.append(("tick", now))

    def process_batch(self, batch: list[Rec]) -> None:
        EVENTS.append(("batch", len(batch)))

    def close(self) -> None:
        EVENTS.append(("close", None))


class Broken(BatchProcessor):
    def init(self, context: ProcessorContext) -> None:
        raise RuntimeError("no")

    def process_batch(self, batch: list[Rec]) -> None:
        pass


def remembering(child: type[BatchProcessor] | None = None) -> Topology:
    t = (
        Topology()
        .add_source("in", "input")
        .add_processor("remember", Remember, "in")
        .add_state_store(Stores.key_value_store("kv"), "remember")
    )
    if child is not None:
        t.add_processor("child", child, "remember")
    return t


@pytest.fixture(autouse=True)
def _events() -> None:
    EVENTS.clear()


def state_of(task: TaskExecutor) -> TaskState:
    """``task.state`` read afresh (a type checker keeps what an earlier check narrowed)."""
    return task.state


def _task(topology: Topology, root: pathlib.Path, wall: int = 0) -> TaskExecutor:
    return TaskExecutor(topology, 0, 0, {"application_id": APP}, state_dir=root, wall_clock_ms=wall)


def test_processors_start_only_after_the_stores_are_restored(tmp_path: pathlib.Path) -> None:
    task = _task(remembering(), tmp_path, wall=100)
    task.open_stores()
    assert task.state is TaskState.RESTORING and EVENTS == []
    # Restoring writes into the open stores; nothing else runs.
    task.stores["kv"].restore_batch([(b"k", b"restored")])
    record = ("input", 0, 0, 5, b"k", b"v", ())
    for refused in (
        lambda: task.process([record]),
        lambda: task.process_partition("input", 0, [record]),
        lambda: task.punctuate_wall_clock(10_000),
        lambda: task.flush(),
        lambda: task.flush_caches(),
        lambda: task.release(),
    ):
        with pytest.raises(IllegalStateTransition, match="RESTORING, must be RUNNING"):
            refused()
    assert EVENTS == []
    with pytest.raises(IllegalStateTransition):
        task.open_stores()

    task.start(wall_clock_ms=5_000)
    assert state_of(task) is TaskState.RUNNING
    # init saw the restored store, at the wall clock of the start
    assert EVENTS == [("init", (b"restored", 5_000))]
    # a wall-clock punctuation made in init counts from the start, not from the open
    assert not task.punctuate_wall_clock(5_999)
    assert task.punctuate_wall_clock(6_000)
    task.process([record])
    with pytest.raises(IllegalStateTransition):
        task.start()
    task.close()
    assert EVENTS[-3:] == [("tick", 6_000), ("batch", 1), ("close", None)]


def test_a_task_closed_while_restoring_closes_its_stores_only(tmp_path: pathlib.Path) -> None:
    task = _task(remembering(), tmp_path)
    task.open_stores()
    store = task.stores["kv"]
    store.restore_batch([(b"k", b"1")])
    task.close()
    assert task.state is TaskState.CLOSED and EVENTS == []  # never started, never closed
    with pytest.raises(InvalidStoreStateError):
        store.get(b"k")
    task.close()  # idempotent
    with pytest.raises(IllegalStateTransition):
        task.start()
    # What it restored was flushed on the way out: the next open finds it.
    again = _task(remembering(), tmp_path)
    again.init()
    assert EVENTS == [("init", (b"1", 0))]
    again.close()


def test_a_failed_start_closes_what_started_and_cannot_be_retried(tmp_path: pathlib.Path) -> None:
    task = _task(remembering(Broken), tmp_path)
    task.open_stores()
    with pytest.raises(ProcessingError, match="init of child failed"):
        task.start()
    assert task.state is TaskState.RESTORING
    with pytest.raises(IllegalStateTransition, match="its start failed"):
        task.start()
    task.close()
    assert [e for e, _ in EVENTS] == ["init", "close"]  # the parent, started, is closed


def test_init_is_both_steps_at_once(tmp_path: pathlib.Path) -> None:
    task = _task(remembering(), tmp_path, wall=42)
    task.init()
    assert task.state is TaskState.RUNNING and EVENTS == [("init", (None, 42))]
    task.close()
    assert EVENTS[-1] == ("close", None)


def _manager(tmp_path: pathlib.Path, clock: list[int]) -> TaskManager:
    return TaskManager(
        remembering(),
        StreamsConfig(application_id=APP, state_dir=tmp_path),
        tmp_path,
        {0: ("input",)},
        {0: {"kv": f"{APP}-kv-changelog"}},
        lambda topic: 1,
        lambda: clock[0],
    )


def test_runtime_tasks_and_standbys_start_processors_only_once_restored(
    tmp_path: pathlib.Path,
) -> None:
    clock = [1_000]
    tasks = _manager(tmp_path, clock)
    (task,) = tasks.open([("input", 0)])
    assert task.state is RuntimeTaskState.RESTORING
    assert task.executor.state is TaskState.RESTORING and EVENTS == []
    task.executor.stores["kv"].restore_batch([(b"k", b"from the changelog")])
    clock[0] = 9_000
    task.restored({(f"{APP}-kv-changelog", 0): 1})
    assert task.running and state_of(task.executor) is TaskState.RUNNING
    assert EVENTS == [("init", (b"from the changelog", 9_000))]
    with pytest.raises(IllegalStateTransition):
        task.restored({})
    task.close()

    # A standby keeps stores current and never starts its processors; promoted, the
    # active task starts them once it has restored the rest.
    EVENTS.clear()
    standby = tasks.open_standby("0_1")
    assert standby.executor.state is TaskState.RESTORING
    standby.apply((f"{APP}-kv-changelog", 1), [(0, b"k", b"standby", 0)])
    (promoted,) = tasks.open([("input", 1)], {"0_1": standby})
    assert promoted.executor is standby.executor and not promoted.running and EVENTS == []
    promoted.executor.stores["kv"].restore_batch([(b"k", b"standby and the rest")])
    promoted.restored({(f"{APP}-kv-changelog", 1): 2})
    assert EVENTS == [("init", (b"standby and the rest", 9_000))]
    promoted.close()
    assert EVENTS[-1] == ("close", None)

    # Closed while restoring: stores closed, processors never started nor closed.
    EVENTS.clear()
    (restoring,) = tasks.open([("input", 2)])
    restoring.close()
    assert restoring.state is RuntimeTaskState.CLOSED and EVENTS == []

    # The runtime hosts only executors whose processors have not started yet.
    started = _task(remembering(), tmp_path / "elsewhere")
    started.init()
    with pytest.raises(IllegalStateTransition, match="must be RESTORING"):
        RuntimeTask("0_0", started, (("input", 0),), {}, tmp_path, {})
    started.close()


# -- final results, restored into real RocksDB stores ----------------------------------

MINUTE = 60_000


def _report(window: Windowed[str], n: int) -> tuple[str, str]:
    return window.key, f"{window.window.start // MINUTE}:{n}"


def windowed_counts() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream("views", key_serde=Serdes.string(), value_serde=Serdes.string())
        .group_by_key()
        .windowed_by(TimeWindows.of_size(MINUTE).grace(0))
        .emit_final(idle_close=1_000)
        .count(materialized=materialized("counts"))
        .to_stream()
        .map(_report)
        .to("finals", key_serde=Serdes.string(), value_serde=Serdes.string())
    )
    return builder.build()


def _finals(
    task: TaskExecutor, logs: dict[str, list[tuple[int, bytes, bytes | None, int]]]
) -> list[str]:
    """The final results drained; changelog records kept in ``logs`` as the runtime's
    changelog reader gives them, ``(offset, key, value, timestamp)``."""
    out = []
    for topic, key, value, timestamp, *_ in task.drain():
        if topic == "finals":
            assert key is not None and value is not None
            out.append(f"{key.decode()}@{value.decode()}")
        else:
            assert key is not None
            log = logs.setdefault(topic, [])
            log.append((len(log), key, value, timestamp))
    return out


def test_final_results_restored_from_the_changelog_are_pending_again(
    tmp_path: pathlib.Path,
) -> None:
    """A second task whose stores are filled by restoring the first one's changelog
    sees the windows the first left open and its stream time: each final result once."""
    first = _task(windowed_counts(), tmp_path / "first")
    first.init()
    views = [("a", 10_000), ("b", 20_000), ("a", 65_000)]
    first.process([("views", 0, i, ts, k.encode(), b"v", ()) for i, (k, ts) in enumerate(views)])
    first.flush()
    logs: dict[str, list[tuple[int, bytes, bytes | None, int]]] = {}
    emitted = _finals(first, logs)
    first.close()
    assert emitted == ["a@0:1", "b@0:1"]
    stores = changelog_topics(windowed_counts(), APP)[0]
    assert sorted(logs) == sorted(stores.values())

    second = _task(windowed_counts(), tmp_path / "second", wall=1_000_000)
    second.open_stores()
    for store, topic in stores.items():
        apply_changelog(second.stores[store], store, "0_0", logs[topic])
    second.start(wall_clock_ms=2_000_000)
    # Input stays quiet: minute 1 closes on idle time (stream time 65 s + idle > 120 s).
    second.punctuate_wall_clock(2_000_000 + MINUTE)
    emitted += _finals(second, logs)
    second.punctuate_wall_clock(2_000_000 + 2 * MINUTE)
    second.process([("views", 0, 3, 300_000, b"c", b"v", ())])  # minute 5: closes 1-4
    second.process([("views", 0, 4, 30_000, b"b", b"v", ())])  # minute 0 again: late
    emitted += _finals(second, logs)
    second.close()
    assert emitted == ["a@0:1", "b@0:1", "a@1:1"]
