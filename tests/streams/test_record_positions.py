"""The named field positions of the three record shapes match what the task really reads
and writes: a record goes in as consumed and comes out as produced, every field where
its name says."""

from __future__ import annotations

from pathlib import Path

from headrace.dsl import Serdes, StreamsBuilder
from headrace.streams import ConsumedRecord, TaskExecutor
from headrace.streams._record import ConsumedAt, ProducedAt, RecAt, consumed_position


def _consumed(topic: str, partition: int, offset: int, timestamp: int) -> ConsumedRecord:
    fields: list[object] = [None] * 7
    fields[ConsumedAt.TOPIC] = topic
    fields[ConsumedAt.PARTITION] = partition
    fields[ConsumedAt.OFFSET] = offset
    fields[ConsumedAt.TIMESTAMP] = timestamp
    fields[ConsumedAt.KEY] = b"key"
    fields[ConsumedAt.VALUE] = b"value"
    fields[ConsumedAt.HEADERS] = (("h", b"1"),)
    return tuple(fields)  # type: ignore[return-value]


def test_a_record_keeps_every_field_from_consumed_to_produced(tmp_path: Path) -> None:
    seen: list[tuple[object, object]] = []
    builder = StreamsBuilder()
    stream = builder.stream("in", key_serde=Serdes.bytes(), value_serde=Serdes.bytes())
    stream.peek(lambda k, v: seen.append((k, v))).map_values(lambda v: v + b"!").to(
        "out", key_serde=Serdes.bytes(), value_serde=Serdes.bytes()
    )
    task = TaskExecutor(builder.build(), 0, 3, state_dir=tmp_path)
    task.init()
    task.process_partition("in", 3, [_consumed("in", 3, 41, 1_700_000_000_123)])
    (produced,) = task.drain()
    task.close()
    assert seen == [(b"key", b"value")]
    assert produced[ProducedAt.TOPIC] == "out"
    assert produced[ProducedAt.KEY] == b"key"
    assert produced[ProducedAt.VALUE] == b"value!"
    assert produced[ProducedAt.TIMESTAMP] == 1_700_000_000_123
    assert tuple(produced[ProducedAt.HEADERS]) == (("h", b"1"),)
    assert produced[ProducedAt.PARTITION] is None  # the producer's partitioner chooses


def test_positions_name_every_field_once() -> None:
    for shape, size in ((RecAt, 5), (ConsumedAt, 7), (ProducedAt, 6)):
        positions = [v for k, v in vars(shape).items() if k.isupper()]
        assert sorted(positions) == list(range(size)), shape.__name__
    assert consumed_position(_consumed("orders", 2, 17, 0)) == "orders-2 offset 17"
