"""The task executor as the runtime drives it: consumed tuples in, produced tuples out."""

import pathlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headrace.streams import (
    BatchProcessor,
    DeadLetterQueueHandler,
    IllegalStateTransition,
    LogAndContinueHandler,
    Rec,
    RecordDeserializationError,
    TaskExecutor,
    TaskState,
    Topology,
    TopologyError,
)


class Utf8:
    """A serde written against the Protocols only (no fast-path hooks)."""

    def serialize(self, topic: str, obj: object) -> bytes | None:
        return None if obj is None else str(obj).encode()

    def deserialize(self, topic: str, data: bytes | None) -> str | None:
        return None if data is None else data.decode()


def executor(topology: Topology, tmp_path: pathlib.Path, **kwargs: object) -> TaskExecutor:
    task = TaskExecutor(topology, 0, 3, {"application_id": "app"}, state_dir=tmp_path, **kwargs)  # type: ignore[arg-type]
    task.init()
    return task


def test_consumed_tuples_in_produced_tuples_out(tmp_path: pathlib.Path) -> None:
    t = Topology().add_source("s", "a", "b", key_deserializer=Utf8(), value_deserializer=Utf8())
    t.add_sink("k", "out", "s", key_serializer=Utf8(), value_serializer=Utf8())
    task = executor(t, tmp_path)
    assert task.task_id == "0_3" and task.state is TaskState.RUNNING
    task.process(
        [
            ("a", 3, 10, 1000, b"k1", b"v1", ()),
            ("b", 3, 7, 900, None, b"v2", (("h", b"1"),)),
            ("a", 3, 11, 1100, b"k3", None, ()),
        ]
    )
    assert task.drain() == [
        ("out", b"k1", b"v1", 1000, (), None),
        ("out", None, b"v2", 900, (("h", b"1"),), None),
        ("out", b"k3", None, 1100, (), None),
    ]
    assert task.drain() == []
    assert task.stream_time == 1100
    with pytest.raises(TopologyError):
        task.process_partition("elsewhere", 0, [("elsewhere", 0, 0, 0, None, None, ())])
    task.close()
    assert task.state in (TaskState.CLOSED,)  # read again: close() changed it
    with pytest.raises(IllegalStateTransition):
        task.process([])


def test_partitioner_and_per_record_topic(tmp_path: pathlib.Path) -> None:
    t = Topology().add_source("s", "in")
    t.add_sink("fixed", "fixed", "s", partitioner=lambda topic, k, v, n: int(k) % n)
    t.add_sink("chosen", lambda k, v, ts: f"t-{v.decode()}", "s")
    task = executor(t, tmp_path, partitions_for=lambda topic: 4)
    task.process([("in", 0, i, i, str(i).encode(), b"x" if i % 2 else b"y", ()) for i in range(6)])
    out = task.drain()
    fixed = [r for r in out if r[0] == "fixed"]
    assert [r[5] for r in fixed] == [0, 1, 2, 3, 0, 1]
    assert [r[0] for r in out if r[0] != "fixed"] == ["t-y", "t-x", "t-y", "t-x", "t-y", "t-x"]


def test_internal_topics_carry_the_application_id(tmp_path: pathlib.Path) -> None:
    t = Topology().add_source("s", "in").add_sink("k", "x-repartition", "s")
    t.add_internal_topic("x-repartition", 6)
    t.add_source("back", "x-repartition").add_sink("k2", "out", "back")
    assert t.internal_topics == {"x-repartition": 6}
    first = executor(t, tmp_path)
    first.process([("in", 3, 0, 5, b"k", b"v", ())])
    assert first.drain()[0][0] == "app-x-repartition"
    second = TaskExecutor(t, 1, 3, {"application_id": "app"}, state_dir=tmp_path)
    second.init()
    assert second.reads("app-x-repartition") and not second.reads("x-repartition")


class Bad:
    def deserialize(self, topic: str, data: bytes | None) -> str:
        if data == b"bad":
            raise ValueError("cannot read this")
        return (data or b"").decode()


def test_dead_letter_queue_gets_raw_bytes_and_error_headers(tmp_path: pathlib.Path) -> None:
    t = Topology().add_source(
        "s", "in", value_deserializer=Bad(), deserialization_handler=DeadLetterQueueHandler("dlq")
    )
    t.add_sink("k", "out", "s", value_serializer=Utf8())
    task = executor(t, tmp_path)
    task.process(
        [
            ("in", 3, 40, 1, b"k", b"good", ()),
            ("in", 3, 41, 2, b"k", b"bad", (("trace", b"t1"),)),
            ("in", 3, 42, 3, b"k", b"fine", ()),
        ]
    )
    out = task.drain()
    assert [(r[0], r[2]) for r in out] == [("dlq", b"bad"), ("out", b"good"), ("out", b"fine")]
    letter = out[0]
    headers = dict(letter[4])
    assert letter[1] == b"k" and letter[3] == 2
    assert headers["trace"] == b"t1"
    assert headers["__streams.errors.exception"] == b"builtins.ValueError"
    assert headers["__streams.errors.message"] == b"cannot read this"
    assert headers["__streams.errors.topic"] == b"in"
    assert headers["__streams.errors.partition"] == b"3"
    assert headers["__streams.errors.offset"] == b"41"
    assert b"ValueError" in headers["__streams.errors.stacktrace"]


def test_log_and_continue_skips_and_log_and_fail_stops(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    records = [("in", 3, 0, 1, b"k", b"bad", ()), ("in", 3, 1, 1, b"k", b"ok", ())]
    go_on = Topology().add_source(
        "s", "in", value_deserializer=Bad(), deserialization_handler=LogAndContinueHandler()
    )
    go_on.add_sink("k", "out", "s", value_serializer=Utf8())
    task = executor(go_on, tmp_path)
    task.process(records)
    assert [r[2] for r in task.drain()] == [b"ok"]
    assert "in-3 offset 0" in caplog.text

    stop = Topology().add_source("s", "in", value_deserializer=Bad())  # default: log and fail
    stop.add_sink("k", "out", "s", value_serializer=Utf8())
    task = executor(stop, tmp_path / "2")
    with pytest.raises(RecordDeserializationError) as info:
        task.process(records)
    assert (info.value.topic, info.value.partition, info.value.offset) == ("in", 3, 0)


def test_timestamp_extractor_and_negative_timestamps(tmp_path: pathlib.Path) -> None:
    t = Topology().add_source("s", "in", timestamp_extractor=lambda k, v, ts: int(v))
    t.add_sink("k", "out", "s")
    task = executor(t, tmp_path)
    task.process([("in", 3, i, 0, None, v, ()) for i, v in enumerate([b"50", b"-1", b"70"])])
    assert [(r[2], r[3]) for r in task.drain()] == [(b"50", 50), (b"70", 70)]
    assert task.stream_time == 70


class Duplicate(BatchProcessor):
    """Emits each record twice: a flat_map-like fan-out with equal source offsets."""

    def process_batch(self, batch: list[Rec]) -> None:
        self.context.forward_batch([r for r in batch for _ in range(2)])


class Evens(BatchProcessor):
    def __init__(self, keep: int) -> None:
        self.keep = keep

    def process_batch(self, batch: list[Rec]) -> None:
        self.context.forward_batch([r for r in batch if int(r[1]) % 2 == self.keep])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 99), max_size=40))
def test_fan_out_and_meet_again_keeps_input_order(
    tmp_path_factory: pytest.TempPathFactory, values: list[int]
) -> None:
    """Split into evens and odds, meet in a merge and in two sinks on one topic: the
    output must be in input order, as a record-at-a-time walk would give."""
    t = Topology().add_source("s", "in").add_processor("dup", Duplicate, "s")
    t.add_processor("even", lambda: Evens(0), "dup").add_processor("odd", lambda: Evens(1), "dup")
    t.add_processor("merge", Duplicate, "even", "odd").add_sink("merged", "m", "merge")
    t.add_sink("even-sink", "same", "even").add_sink("odd-sink", "same", "odd")
    task = executor(t, tmp_path_factory.mktemp("t"))
    task.process([("in", 3, i, i, None, str(v).encode(), ()) for i, v in enumerate(values)])
    out = task.drain()
    expected = [str(v).encode() for v in values for _ in range(2)]
    assert [r[2] for r in out if r[0] == "same"] == expected
    assert [r[2] for r in out if r[0] == "m"] == [v for v in expected for _ in range(2)]
