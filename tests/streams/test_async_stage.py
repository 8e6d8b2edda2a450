"""Async processors in the task executor, stepped one event-loop turn at a time.

Calls finish after a number of loop turns the test draws (no wall-clock sleeping), so
hypothesis explores completion orders quickly. After every turn the test releases what
finished and checks the two promises of ``streams/_async.py``: the order of results
(per key, or per input, as asked) and the commit point (every offset below it has its
result out).
"""

from __future__ import annotations

import asyncio
import pathlib
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headrace.streams import (
    AsyncOptions,
    AsyncProcessor,
    ProducedRecord,
    Record,
    TaskExecutor,
    Topology,
    TopologyError,
)


class Utf8:
    def serialize(self, topic: str, obj: object) -> bytes | None:
        return None if obj is None else str(obj).encode()

    def deserialize(self, topic: str, data: bytes | None) -> str | None:
        return None if data is None else data.decode()


class Echo(AsyncProcessor):
    """Forwards each record after ``turns[value]`` loop turns."""

    def __init__(self, options: AsyncOptions, turns: dict[str, int]) -> None:
        self.options = options
        self._turns = turns

    async def process(self, record: Record) -> Record:
        for _ in range(self._turns[record.value]):
            await asyncio.sleep(0)
        return record.with_value(record.value + "!")


def _topology(options: AsyncOptions, turns: dict[str, int]) -> Topology:
    return (
        Topology()
        .add_source("in", "a", "b", key_deserializer=Utf8(), value_deserializer=Utf8())
        .add_processor("echo", lambda: Echo(options, turns), "in")
        .add_sink("out", "out", "echo", key_serializer=Utf8(), value_serializer=Utf8())
    )


@pytest.fixture
def state_dir() -> Iterator[pathlib.Path]:
    with tempfile.TemporaryDirectory() as d:
        yield pathlib.Path(d)


def _run(
    options: AsyncOptions,
    inputs: list[tuple[str, str]],
    turns: list[int],
    chunk: int,
    state_dir: pathlib.Path,
) -> list[ProducedRecord]:
    """Feed ``inputs`` (topic, key) ``chunk`` at a time, one loop turn between chunks;
    after each turn check the commit point; return the output in production order."""
    loop = asyncio.new_event_loop()
    values = {f"{topic}:{i}": turns[i] for i, (topic, _key) in enumerate(inputs)}
    task = TaskExecutor(
        _topology(options, values), 0, 0, {"application_id": "app"}, state_dir=state_dir, loop=loop
    )
    task.init()
    out: list[ProducedRecord] = []
    next_offset = {"a": 0, "b": 0}
    consumed: dict[str, list[int]] = {"a": [], "b": []}  # offsets fed, per partition
    done: set[tuple[str, int]] = set()
    pending = list(enumerate(inputs))

    def check_commit_points() -> None:
        for topic in ("a", "b"):
            point = task.commit_offset(topic, 0, next_offset[topic])
            assert all((topic, o) in done for o in consumed[topic] if o < point), (topic, point)

    def collect() -> None:
        task.release()
        for record in task.drain():
            out.append(record)
            topic, offset = (record[2] or b"").decode().rstrip("!").split(":")[0], None
            offset = int(record[4][0][1]) if record[4] else None
            assert offset is not None
            done.add((topic, offset))
        check_commit_points()

    try:
        while pending or task.async_busy:
            for i, (topic, key) in pending[:chunk]:
                o = next_offset[topic]
                headers = (("offset", str(o).encode()),)
                task.process_partition(
                    topic, 0, [(topic, 0, o, i, key.encode(), f"{topic}:{i}".encode(), headers)]
                )
                next_offset[topic] = o + 1
                consumed[topic].append(o)
            del pending[:chunk]
            check_commit_points()
            loop.run_until_complete(asyncio.sleep(0))
            collect()
        for topic in ("a", "b"):
            assert task.commit_offset(topic, 0, next_offset[topic]) == next_offset[topic]
    finally:
        task.close()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
    return out


inputs_st = st.lists(
    st.tuples(st.sampled_from("ab"), st.sampled_from("kxyz")), min_size=1, max_size=60
)


@settings(max_examples=60, deadline=None)
@given(
    inputs=inputs_st,
    turns=st.lists(st.integers(0, 12), min_size=60, max_size=60),
    concurrency=st.integers(1, 256),
    chunk=st.integers(1, 20),
    order=st.sampled_from(["key", "partition", "none"]),
)
def test_results_keep_their_order_and_commit_points_never_pass_a_pending_result(
    inputs: list[tuple[str, str]], turns: list[int], concurrency: int, chunk: int, order: str
) -> None:
    with tempfile.TemporaryDirectory() as d:
        out = _run(
            AsyncOptions(concurrency=concurrency, order=order),
            inputs,
            turns,
            chunk,
            pathlib.Path(d),
        )
    got = [(r[2] or b"").decode().rstrip("!") for r in out]
    want = [f"{topic}:{i}" for i, (topic, _key) in enumerate(inputs)]
    assert sorted(got) == sorted(want)  # every record once, whatever the order
    if order == "partition":
        assert got == want
    if order in ("key", "partition"):
        for key in "kxyz":
            assert [g for g in got if inputs[int(g.split(":")[1])][1] == key] == [
                w for w in want if inputs[int(w.split(":")[1])][1] == key
            ]
    # timestamps and headers travel with their record
    for r in out:
        i = int((r[2] or b"").decode().rstrip("!").split(":")[1])
        assert r[3] == i


def test_a_full_stage_says_so_and_keeps_the_rest_queued(state_dir: pathlib.Path) -> None:
    loop = asyncio.new_event_loop()
    gate = asyncio.Event()

    class Wait(AsyncProcessor):
        options = AsyncOptions(concurrency=3)

        async def process(self, record: Record) -> Record:
            await gate.wait()
            return record

    topology = (
        Topology()
        .add_source("in", "a")
        .add_processor("wait", Wait, "in")
        .add_sink("out", "out", "wait")
    )
    task = TaskExecutor(topology, 0, 0, {"application_id": "app"}, state_dir=state_dir, loop=loop)
    task.init()
    try:
        task.process_partition("a", 0, [("a", 0, 0, 0, b"k", b"v0", ())])
        loop.run_until_complete(asyncio.sleep(0))
        assert task.async_busy and not task.async_saturated
        task.process_partition("a", 0, [("a", 0, o, 0, b"k", b"v", ()) for o in range(1, 5)])
        loop.run_until_complete(asyncio.sleep(0))
        assert task.async_saturated
        assert task.commit_offset("a", 0, 5) == 0
        gate.set()
        loop.run_until_complete(task.settle())
        assert len(task.drain()) == 5
        assert not task.async_busy and task.commit_offset("a", 0, 5) == 5
    finally:
        task.close()
        loop.close()


def test_closing_cancels_calls_in_flight(state_dir: pathlib.Path) -> None:
    loop = asyncio.new_event_loop()
    started: list[asyncio.Task[object] | None] = []

    class Forever(AsyncProcessor):
        async def process(self, record: Record) -> None:
            started.append(asyncio.current_task())
            await asyncio.Event().wait()

    topology = Topology().add_source("in", "a").add_processor("f", Forever, "in")
    task = TaskExecutor(topology, 0, 0, {"application_id": "app"}, state_dir=state_dir, loop=loop)
    task.init()
    task.process_partition("a", 0, [("a", 0, o, 0, b"k", b"v", ()) for o in range(4)])
    loop.run_until_complete(asyncio.sleep(0))
    assert len(started) == 4
    task.close()
    loop.run_until_complete(asyncio.sleep(0))
    assert all(t is not None and t.cancelled() for t in started)
    loop.close()


@pytest.mark.parametrize(
    "options",
    [
        {"concurrency": 0},
        {"concurrency": 10**6},
        {"order": "random"},
        {"timeout": 0},
        {"retries": -1},
        {"backoff": -1.0},
    ],
)
def test_options_out_of_range_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(TopologyError):
        AsyncOptions(**options)  # type: ignore[arg-type]


def test_a_failing_result_fails_its_record_alone_and_the_others_come_out_once(
    state_dir: pathlib.Path,
) -> None:
    from headrace.streams import Processor

    class Odd(AsyncProcessor):
        options = AsyncOptions(concurrency=8, order="partition")

        async def process(self, record: Record) -> Record:
            if record.value == "bad-result":
                raise LookupError("no such customer")
            return record

    class Downstream(Processor):
        def process(self, record: Record) -> None:
            if record.value == "bad-downstream":
                raise ArithmeticError("downstream")
            self.context.forward(record)

    topology = (
        Topology()
        .add_source("in", "a", value_deserializer=Utf8())
        .add_processor("odd", Odd, "in")
        .add_processor("down", Downstream, "odd")
        .add_sink("out", "out", "down", value_serializer=Utf8())
    )
    loop = asyncio.new_event_loop()
    task = TaskExecutor(topology, 0, 0, {"application_id": "app"}, state_dir=state_dir, loop=loop)
    task.init()
    values = [b"ok0", b"bad-result", b"ok2", b"bad-downstream", b"ok4"]
    try:
        task.process_partition("a", 0, [("a", 0, o, 0, b"k", v, ()) for o, v in enumerate(values)])
        loop.run_until_complete(task.settle())
        assert [r[2] for r in task.drain()] == [b"ok0", b"ok2", b"ok4"]
        failures = task.take_failures()
        assert [(raw[2], raw[5], type(error)) for raw, error, _node in failures] == [
            (1, b"bad-result", LookupError),
            (3, b"bad-downstream", ArithmeticError),
        ]
        assert task.commit_offset("a", 0, 5) == 5  # failed records are handled, not in flight
    finally:
        task.close()
        loop.close()
