"""Records a table could not take land in ``<location>/_dead_letters/<topic>``, exactly once
by offsets, so a replay after a crash adds none twice."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable
from kafka_clients import unique

from headrace import Serdes
from headrace.table_topics._dead_letters import DeadLetterTable
from headrace.table_topics._records import TopicRecord
from headrace.table_topics._schema_rows import DeadLetter, ValueSchemaRows

SALE = {
    "type": "record",
    "name": "Sale",
    "fields": [{"name": "item", "type": "string"}, {"name": "cents", "type": "long"}],
}


def letter(offset: int, value: bytes | None = b"junk", partition: int = 0) -> DeadLetter:
    record = TopicRecord(partition, offset, 1_700_000_000_000 + offset, b"k", value, [("h", b"1")])
    return DeadLetter(record, f"reason {offset}")


def read(table: DeadLetterTable) -> pa.Table:
    return (
        DeltaTable(table.path)
        .to_pyarrow_table()
        .sort_by([("partition", "ascending"), ("offset", "ascending")])
    )


def test_the_records_a_schema_refuses_land_with_their_reason_and_schema_id(
    registry: str, tmp_path: Path
) -> None:
    topic = unique("sales")
    serde = Serdes.avro(SALE, registry)
    good = serde.serialize(topic, {"item": "pen", "cents": 1})
    schema_id = int.from_bytes(good[1:5], "big")
    # The right framing and id, then a payload that is not a Sale.
    broken = good[:5] + b"\xff"
    batch = [
        TopicRecord(0, 0, 1_700_000_000_000, b"a", good, []),
        TopicRecord(0, 1, 1_700_000_000_001, b"b", broken, [("trace", b"t-1")]),
        TopicRecord(0, 2, 1_700_000_000_002, None, b"plain text", []),
    ]
    rows, dead = ValueSchemaRows(registry, topic).rows(batch)
    assert rows["offset"].to_pylist() == [0]
    letters = DeadLetterTable(str(tmp_path), topic)
    assert letters.path == f"{tmp_path}/_dead_letters/{topic}"
    assert letters.append(dead, {0: 3}) == 2

    table = read(letters)
    assert table.column_names == [
        "topic", "partition", "offset", "timestamp", "key", "value", "headers", "reason",
        "schema_id",
    ]  # fmt: skip
    got = table.to_pylist()
    assert [(r["offset"], r["key"], r["value"], r["schema_id"]) for r in got] == [
        (1, b"b", broken, schema_id),
        (2, None, b"plain text", None),
    ]
    assert got[0]["headers"] == [{"key": "trace", "value": b"t-1"}]
    assert got[0]["reason"].startswith("value does not decode")
    assert got[0]["topic"] == topic
    assert table["timestamp"].cast(pa.int64()).to_pylist()[0] == 1_700_000_000_001_000  # µs


def test_a_replay_after_a_crash_adds_no_letter_twice(tmp_path: Path) -> None:
    letters = DeadLetterTable(str(tmp_path), "payments")
    assert letters.append([letter(3), letter(7), letter(2, partition=1)], {0: 10, 1: 5}) == 3
    version = DeltaTable(letters.path).version()

    # The writer died before its own table's commit and reads the batch again.
    again = DeadLetterTable(str(tmp_path), "payments")
    assert again.append([letter(3), letter(7), letter(2, partition=1)], {0: 10, 1: 5}) == 0
    assert DeltaTable(letters.path).version() == version
    assert again.committed_offsets([0, 1, 2]) == {0: 10, 1: 5}

    # A longer replay: what the first pass covered is dropped, what follows lands, even a
    # letter inside the covered range that the first pass did not make.
    assert (
        again.append([letter(7), letter(9), letter(12), letter(4, partition=1)], {0: 13, 1: 5}) == 1
    )
    table = read(letters)
    assert list(zip(table["partition"].to_pylist(), table["offset"].to_pylist(), strict=True)) == [
        (0, 3), (0, 7), (0, 12), (1, 2),
    ]  # fmt: skip
    assert again.committed_offsets([0, 1]) == {0: 13, 1: 5}


def test_a_batch_without_dead_letters_commits_nothing(tmp_path: Path) -> None:
    letters = DeadLetterTable(str(tmp_path), "quiet")
    assert letters.append([], {0: 100}) == 0
    assert not Path(letters.path).exists()
    assert letters.committed_offsets([0]) == {}


def test_without_ends_the_last_letter_bounds_what_a_replay_skips(tmp_path: Path) -> None:
    letters = DeadLetterTable(str(tmp_path), "events", app_id="other-writer")
    assert letters.append([letter(5)]) == 1
    assert letters.committed_offsets([0]) == {0: 6}
    assert letters.append([letter(5), letter(6)]) == 1
    assert read(letters)["offset"].to_pylist() == [5, 6]
    assert DeltaTable(letters.path).transaction_version("other-writer/events/0") == 7
