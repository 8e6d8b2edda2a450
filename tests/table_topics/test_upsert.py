"""A compacted topic's table holds the latest value per key, merged exactly once by offsets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable
from kafka_clients import unique

from headrace import Serdes
from headrace.table_topics._records import TopicRecord
from headrace.table_topics._rows import key_value_rows
from headrace.table_topics._schema_rows import ValueSchemaRows, tombstones
from headrace.table_topics._upsert import upsert

APP = "headrace-table"


def rows(*records: tuple[int, int, bytes | None, bytes | None]) -> pa.Table:
    """Rows as the key_value mode makes them: (partition, offset, key, value)."""
    made = [TopicRecord(p, o, 1_700_000_000_000 + o, k, v, [("h", b"x")]) for p, o, k, v in records]
    return key_value_rows(made)


def contents(path: Path) -> dict[bytes, tuple[bytes, int]]:
    table = DeltaTable(str(path)).to_pyarrow_table()
    return {
        r["key"]: (r["value"], r["offset"])
        for r in table.select(["key", "value", "offset"]).to_pylist()
    }


def last_commit(path: Path) -> list[dict[str, Any]]:
    log = sorted((path / "_delta_log").glob("*.json"))[-1]
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_the_table_holds_the_latest_value_per_key_and_tombstones_delete(tmp_path: Path) -> None:
    path = tmp_path / "prices"
    # One batch with two values of k1: only the later one lands.
    upsert(
        str(path),
        rows((0, 0, b"k1", b"1.00"), (0, 1, b"k2", b"2.00"), (0, 2, b"k1", b"1.10")),
        {0: 3},
        app_id=APP,
    )
    assert contents(path) == {b"k1": (b"1.10", 2), b"k2": (b"2.00", 1)}
    assert DeltaTable(str(path)).transaction_version(f"{APP}/prices/0") == 3

    upsert(
        str(path),
        rows((0, 3, b"k2", None), (0, 4, b"k3", b"3.00"), (1, 0, b"k1", b"1.20")),
        {0: 5, 1: 1},
        app_id=APP,
    )
    assert contents(path) == {b"k1": (b"1.20", 0), b"k3": (b"3.00", 4)}
    table = DeltaTable(str(path))
    assert table.transaction_version(f"{APP}/prices/0") == 5
    assert table.transaction_version(f"{APP}/prices/1") == 1
    # The offsets are recorded by the MERGE's own commit, not by one after it.
    actions = last_commit(path)
    txns = {a["txn"]["appId"]: a["txn"]["version"] for a in actions if "txn" in a}
    assert txns == {f"{APP}/prices/0": 5, f"{APP}/prices/1": 1}
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "MERGE"
    assert json.loads(info["headrace.offsets"]) == {"prices/0": 5, "prices/1": 1}
    assert any("add" in a for a in actions)


def test_a_replayed_batch_changes_nothing_and_an_overlapping_one_only_its_new_part(
    tmp_path: Path,
) -> None:
    path = tmp_path / "stock"
    first = rows((0, 0, b"a", b"10"), (0, 1, b"b", b"20"))
    upsert(str(path), first, {0: 2}, app_id=APP)
    upsert(str(path), rows((0, 2, b"a", None)), {0: 3}, app_id=APP)
    version = DeltaTable(str(path)).version()

    # The first batch again (the writer restarted from an older position): no commit, and
    # the deleted key does not come back.
    upsert(str(path), first, {0: 2}, app_id=APP)
    assert DeltaTable(str(path)).version() == version
    assert contents(path) == {b"b": (b"20", 1)}

    # A batch that starts inside what was recorded: offsets 1-2 are skipped, 3 lands.
    upsert(
        str(path),
        rows((0, 1, b"b", b"stale"), (0, 2, b"a", None), (0, 3, b"b", b"21")),
        {0: 4},
        app_id=APP,
    )
    assert contents(path) == {b"b": (b"21", 3)}
    assert DeltaTable(str(path)).transaction_version(f"{APP}/stock/0") == 4


def test_a_batch_that_changes_no_row_still_records_its_offsets(tmp_path: Path) -> None:
    path = tmp_path / "carts"
    upsert(str(path), rows((0, 0, b"a", b"1")), {0: 1}, app_id=APP)
    # A tombstone for a key the table never had: the MERGE changes nothing.
    upsert(str(path), rows((0, 1, b"zzz", None)), {0: 2}, app_id=APP)
    table = DeltaTable(str(path))
    assert table.transaction_version(f"{APP}/carts/0") == 2
    assert contents(path) == {b"a": (b"1", 0)}
    # The ends alone move too (every record of the batch went elsewhere).
    upsert(str(path), rows(), {0: 7}, app_id=APP)
    assert DeltaTable(str(path)).transaction_version(f"{APP}/carts/0") == 7


def test_the_first_batch_creates_the_table_without_its_tombstones(tmp_path: Path) -> None:
    path = tmp_path / "users"
    upsert(str(path), rows((0, 0, b"a", b"1"), (0, 1, b"b", None)), {0: 2}, app_id=APP)
    assert contents(path) == {b"a": (b"1", 0)}
    assert DeltaTable(str(path)).transaction_version(f"{APP}/users/0") == 2


def test_new_value_columns_are_merged_into_the_table_and_old_rows_read_null(
    tmp_path: Path,
) -> None:
    path = tmp_path / "accounts"
    base = rows((0, 0, b"a", b"1"), (0, 1, b"b", b"2"))
    upsert(str(path), base, {0: 2}, app_id=APP)
    wider = rows((0, 2, b"b", b"3"), (0, 3, b"c", b"4")).append_column(
        pa.field("tier", pa.int64()), pa.array([7, 8], pa.int64())
    )
    upsert(str(path), wider, {0: 4}, app_id=APP)
    table = DeltaTable(str(path)).to_pyarrow_table()
    assert table.schema.field("tier").nullable
    tiers = dict(zip(table["key"].to_pylist(), table["tier"].to_pylist(), strict=True))
    assert tiers == {b"a": None, b"b": 7, b"c": 8}
    # A later batch without the column (an older writer schema) sets it null on update.
    upsert(str(path), rows((0, 4, b"c", b"5")), {0: 5}, app_id=APP)
    table = DeltaTable(str(path)).to_pyarrow_table()
    tiers = dict(zip(table["key"].to_pylist(), table["tier"].to_pylist(), strict=True))
    assert tiers == {b"a": None, b"b": 7, b"c": None}


def test_an_explicit_tombstone_mask_deletes_rows_whose_fields_are_not_all_null(
    tmp_path: Path,
) -> None:
    path = tmp_path / "flags"
    upsert(str(path), rows((0, 0, b"a", b"1"), (0, 1, b"b", b"2")), {0: 2}, app_id=APP)
    upsert(
        str(path),
        rows((0, 2, b"a", b"kept"), (0, 3, b"b", b"ignored")),
        {0: 4},
        app_id=APP,
        tombstones=[False, True],
    )
    assert contents(path) == {b"a": (b"kept", 2)}


OPTIONAL_V1: dict[str, Any] = {
    "type": "record",
    "name": "Profile",
    "fields": [{"name": "nick", "type": ["null", "string"], "default": None}],
}
OPTIONAL_V2: dict[str, Any] = {
    **OPTIONAL_V1,
    "fields": [*OPTIONAL_V1["fields"], {"name": "age", "type": ["null", "int"], "default": None}],
}


def test_schema_rows_upsert_with_their_tombstone_mask_and_a_new_version(
    registry: str, tmp_path: Path
) -> None:
    topic = unique("profiles")
    path = tmp_path / topic
    schema_rows = ValueSchemaRows(registry, topic)
    v1 = Serdes.avro(OPTIONAL_V1, registry)

    def write(batch: list[TopicRecord], end: int) -> None:
        table, dead = schema_rows.rows(batch)
        assert dead == []
        upsert(str(path), table, {0: end}, app_id=APP, tombstones=tombstones(batch, dead))

    write(
        [
            TopicRecord(0, 0, 1, b"a", v1.serialize(topic, {"nick": "ada"}), []),
            # A value whose only field is null: a row of nulls that is not a tombstone.
            TopicRecord(0, 1, 2, b"b", v1.serialize(topic, {"nick": None}), []),
        ],
        2,
    )
    assert DeltaTable(str(path)).to_pyarrow_table().num_rows == 2

    v2 = Serdes.avro(OPTIONAL_V2, registry)
    write(
        [
            TopicRecord(0, 2, 3, b"a", None, []),
            TopicRecord(0, 3, 4, b"c", v2.serialize(topic, {"nick": "cy", "age": 7}), []),
        ],
        4,
    )
    table = DeltaTable(str(path)).to_pyarrow_table()
    assert sorted(table.select(["key", "nick", "age"]).to_pylist(), key=lambda r: r["key"]) == [
        {"key": b"b", "nick": None, "age": None},
        {"key": b"c", "nick": "cy", "age": 7},
    ]
