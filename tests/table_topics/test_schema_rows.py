"""A topic's records as rows typed by the registry's latest schema of its value, and the
records that cannot be rows as dead letters; values framed by the real serializers."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from kafka_clients import unique

from headrace import Serdes
from headrace.examples import shop_pb2
from headrace.schema_registry import RegistryClient
from headrace.table_topics._records import TopicRecord
from headrace.table_topics._schema_rows import ValueSchemaRows, tombstones

SALE_V1: dict[str, Any] = {
    "type": "record",
    "name": "Sale",
    "fields": [{"name": "item", "type": "string"}, {"name": "cents", "type": "long"}],
}
SALE_V2 = {
    "type": "record",
    "name": "Sale",
    "fields": [*SALE_V1["fields"], {"name": "vip", "type": "boolean", "default": False}],
}
ORDER_V1: dict[str, Any] = {
    "type": "object",
    "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
    "required": ["sku", "qty"],
    "additionalProperties": False,
}
ORDER_V2 = {
    **ORDER_V1,
    "properties": {**ORDER_V1["properties"], "note": {"type": "string"}},
}


def records(*values: bytes | None, partition: int = 0, start: int = 0) -> list[TopicRecord]:
    return [
        TopicRecord(partition, start + i, 1_700_000_000_000 + i, f"k{i}".encode(), v, [])
        for i, v in enumerate(values)
    ]


def set_compatibility(url: str, subject: str, level: str) -> None:
    body = json.dumps({"compatibility": level}).encode()
    request = urllib.request.Request(f"{url}/config/{subject}", data=body, method="PUT")
    request.add_header("Content-Type", "application/vnd.schemaregistry.v1+json")
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200


def fields(table: pa.Table) -> dict[str, Any]:
    return {f.name: f.type for f in table.schema}


def test_avro_values_become_typed_columns_after_the_record_columns(registry: str) -> None:
    topic = unique("sales")
    serde = Serdes.avro(SALE_V1, registry)
    batch = records(
        serde.serialize(topic, {"item": "pen", "cents": 150}),
        None,  # a tombstone
        serde.serialize(topic, {"item": "ink", "cents": 900}),
    )
    batch[0] = TopicRecord(0, 0, batch[0].timestamp_ms, b"k0", batch[0].value, [("src", b"web")])
    table, dead = ValueSchemaRows(registry, topic).rows(batch)
    assert dead == []
    assert table.column_names == [
        "key", "partition", "offset", "timestamp", "headers", "item", "cents",
    ]  # fmt: skip
    assert fields(table)["cents"] == pa.int64()
    assert fields(table)["timestamp"] == pa.timestamp("ms", tz="UTC")
    assert table.select(["offset", "item", "cents"]).to_pylist() == [
        {"offset": 0, "item": "pen", "cents": 150},
        {"offset": 1, "item": None, "cents": None},
        {"offset": 2, "item": "ink", "cents": 900},
    ]
    assert table["headers"].to_pylist()[0] == [{"key": "src", "value": b"web"}]
    assert table["timestamp"].cast(pa.int64()).to_pylist()[2] == 1_700_000_000_002


def test_avro_evolution_adds_a_nullable_column_and_old_rows_read_null(
    registry: str, tmp_path: Path
) -> None:
    topic = unique("sales-evolving")
    rows = ValueSchemaRows(registry, topic)
    old = Serdes.avro(SALE_V1, registry)
    first, dead = rows.rows(records(old.serialize(topic, {"item": "pen", "cents": 1})))
    assert dead == [] and "vip" not in first.column_names
    write_deltalake(str(tmp_path / "t"), first, mode="append")

    new = Serdes.avro(SALE_V2, registry)  # a compatible version: a field with a default
    later = records(
        old.serialize(topic, {"item": "cap", "cents": 2}),
        new.serialize(topic, {"item": "hat", "cents": 3, "vip": True}),
        start=1,
    )
    second, dead = rows.rows(later)
    assert dead == []
    assert second.schema.field("vip").nullable and fields(second)["vip"] == pa.bool_()
    # A v1 value reads as the latest: the default fills the field it lacked.
    assert second["vip"].to_pylist() == [False, True]
    write_deltalake(str(tmp_path / "t"), second, mode="append", schema_mode="merge")
    table = DeltaTable(str(tmp_path / "t")).to_pyarrow_table().sort_by("offset")
    assert table.select(["item", "vip"]).to_pylist() == [
        {"item": "pen", "vip": None},
        {"item": "cap", "vip": False},
        {"item": "hat", "vip": True},
    ]


def test_avro_records_that_do_not_fit_the_latest_schema_are_dead_letters(
    registry: str,
) -> None:
    topic = unique("sales-misfits")
    subject = f"{topic}-value"
    old = Serdes.avro(SALE_V1, registry)
    stale = old.serialize(topic, {"item": "pen", "cents": 5})
    set_compatibility(registry, subject, "NONE")
    # The latest version changes cents to a string: a v1 long does not resolve to it.
    text_cents = {
        **SALE_V1,
        "fields": [{"name": "item", "type": "string"}, {"name": "cents", "type": "string"}],
    }
    latest = Serdes.avro(text_cents, registry)
    other = RegistryClient(registry).register(unique("elsewhere"), json.dumps(ORDER_V1), "JSON")
    batch = records(
        latest.serialize(topic, {"item": "a", "cents": "5"}),
        stale,
        b"not framed at all",
        b"\x00" + other.to_bytes(4, "big") + b'{"sku": "x", "qty": 1}',
        b"\x00\x00\x0f\x42\x3f" + b"\x02",  # schema id 999999, which nobody registered
        latest.serialize(topic, {"item": "b", "cents": "6"}),
    )
    table, dead = ValueSchemaRows(registry, topic).rows(batch)
    assert table["offset"].to_pylist() == [0, 5]
    assert table["cents"].to_pylist() == ["5", "6"]
    reasons = {d.record.offset: d.reason for d in dead}
    assert sorted(reasons) == [1, 2, 3, 4]
    assert all(d.record is batch[d.record.offset] for d in dead)
    assert "does not decode" in reasons[1] and "Schema" in reasons[1]
    assert "magic byte" in reasons[2] or "too few" in reasons[2]
    assert "is JSON, not AVRO" in reasons[3]
    assert "999999" in reasons[4] or "not found" in reasons[4].lower()


def test_protobuf_values_become_typed_columns_and_a_broken_message_a_dead_letter(
    registry: str,
) -> None:
    topic = unique("customers")
    serde = Serdes.protobuf(shop_pb2.Customer, registry)
    good = serde.serialize(
        topic,
        shop_pb2.Customer(
            id="c1", name="Ada", tier=3, address=shop_pb2.Customer.Address(city="Oslo")
        ),
    )
    # The framing and schema id of a real message, then bytes that are no Customer.
    broken = good[:6] + b"\xff\xff\xff"
    table, dead = ValueSchemaRows(registry, topic).rows(records(good, broken, None))
    assert fields(table)["tier"] == pa.int32()
    assert table.select(["id", "tier", "address"]).to_pylist() == [
        {"id": "c1", "tier": 3, "address": {"city": "Oslo"}},
        {"id": None, "tier": None, "address": None},
    ]
    assert table["offset"].to_pylist() == [0, 2]
    assert [d.record.offset for d in dead] == [1]
    assert "does not decode" in dead[0].reason
    # The tombstone mask lines up with the rows, not with the records.
    assert tombstones(records(good, broken, None), dead) == [False, True]


def test_json_schema_values_validate_against_the_latest_and_evolve(
    registry: str, tmp_path: Path
) -> None:
    topic = unique("orders")
    rows = ValueSchemaRows(registry, topic)
    v1 = Serdes.json_schema(ORDER_V1, registry)
    first, dead = rows.rows(records(v1.serialize(topic, {"sku": "a", "qty": 2})))
    assert dead == [] and fields(first)["qty"] == pa.int64()
    write_deltalake(str(tmp_path / "t"), first, mode="append")

    v2 = Serdes.json_schema(ORDER_V2, registry)
    unchecked = Serdes.json_schema(ORDER_V2, registry, validate=False)
    batch = records(
        v2.serialize(topic, {"sku": "b", "qty": 1, "note": "gift"}),
        unchecked.serialize(topic, {"sku": "c", "qty": "many"}),  # fails the schema
        unchecked.serialize(topic, {"sku": "d"}),  # lacks a required property
        v1.serialize(topic, {"sku": "e", "qty": 4}),
        start=1,
    )
    second, dead = rows.rows(batch)
    assert [d.record.offset for d in dead] == [2, 3]
    assert all("does not validate" in d.reason for d in dead)
    assert "'many' is not of type 'integer'" in dead[0].reason
    assert "'qty' is a required property" in dead[1].reason
    assert second.select(["offset", "sku", "note"]).to_pylist() == [
        {"offset": 1, "sku": "b", "note": "gift"},
        {"offset": 4, "sku": "e", "note": None},
    ]
    write_deltalake(str(tmp_path / "t"), second, mode="append", schema_mode="merge")
    table = DeltaTable(str(tmp_path / "t")).to_pyarrow_table().sort_by("offset")
    assert table.select(["sku", "note"]).to_pylist() == [
        {"sku": "a", "note": None},
        {"sku": "b", "note": "gift"},
        {"sku": "e", "note": None},
    ]


def test_a_value_that_does_not_fit_its_column_is_a_dead_letter_and_the_rest_land(
    registry: str,
) -> None:
    # A JSON Schema with no type for a property validates anything; its column is text,
    # so a nested object there does not fit, while the other rows still convert.
    topic = unique("notes")
    loose = {"type": "object", "properties": {"n": {"type": "integer"}, "text": {}}}
    serde = Serdes.json_schema(loose, registry)
    batch = records(
        serde.serialize(topic, {"n": 1, "text": "fine"}),
        serde.serialize(topic, {"n": 2, "text": {"nested": True}}),
        serde.serialize(topic, {"n": 3}),
    )
    table, dead = ValueSchemaRows(registry, topic).rows(batch)
    assert table.select(["n", "text"]).to_pylist() == [
        {"n": 1, "text": "fine"},
        {"n": 3, "text": None},
    ]
    assert [d.record.offset for d in dead] == [1]
    assert "does not fit the latest schema's columns" in dead[0].reason


def test_without_a_usable_schema_every_value_is_a_dead_letter_and_tombstones_still_rows(
    registry: str,
) -> None:
    topic = unique("unregistered")
    batch = records(b"\x00\x00\x00\x00\x01payload", None)
    table, dead = ValueSchemaRows(registry, topic).rows(batch)
    assert table.column_names == ["key", "partition", "offset", "timestamp", "headers"]
    assert table["offset"].to_pylist() == [1]
    assert [(d.record.offset, d.reason) for d in dead] == [
        (0, f"no schema is registered under {topic}-value")
    ]

    # A value field named like a record column would shadow it: refused, not renamed.
    clashing = {"type": "record", "name": "Moved", "fields": [{"name": "offset", "type": "long"}]}
    topic = unique("clashing")
    value = Serdes.avro(clashing, registry).serialize(topic, {"offset": 7})
    table, dead = ValueSchemaRows(registry, topic).rows(records(value))
    assert table.num_rows == 0
    assert [d.reason for d in dead] == [
        "the value's field 'offset' has the name of a record column"
    ]


READING_V1 = (
    'syntax = "proto3";\nmessage Reading {\n  string sensor = 1;\n  double celsius = 2;\n}\n'
)
READING_V2 = READING_V1.replace(
    "double celsius = 2;\n", "double celsius = 2;\n  int32 battery = 3;\n"
)


def test_protobuf_evolution_adds_a_nullable_column_and_old_rows_read_null(
    registry: str, tmp_path: Path
) -> None:
    from headrace.schema_registry._dynamic_proto import DynamicProtobufSerde

    topic = unique("readings")
    rows = ValueSchemaRows(registry, topic)
    v1 = DynamicProtobufSerde(READING_V1, registry)
    first, dead = rows.rows(records(v1.serialize(topic, {"sensor": "s1", "celsius": 20.5})))
    assert dead == [] and first.column_names[5:] == ["sensor", "celsius"]
    write_deltalake(str(tmp_path / "t"), first, mode="append")

    v2 = DynamicProtobufSerde(READING_V2, registry)  # a new field: a compatible version
    second, dead = rows.rows(
        records(
            v2.serialize(topic, {"sensor": "s2", "celsius": 21.0, "battery": 80}),
            v1.serialize(topic, {"sensor": "s3", "celsius": 19.0}),
            start=1,
        )
    )
    assert dead == []
    assert fields(second)["battery"] == pa.int32() and second.schema.field("battery").nullable
    # A value written with v1 decodes with v1, which has no such field: null, not 0.
    assert second["battery"].to_pylist() == [80, None]
    write_deltalake(str(tmp_path / "t"), second, mode="append", schema_mode="merge")
    table = DeltaTable(str(tmp_path / "t")).to_pyarrow_table().sort_by("offset")
    assert table.select(["sensor", "battery"]).to_pylist() == [
        {"sensor": "s1", "battery": None},
        {"sensor": "s2", "battery": 80},
        {"sensor": "s3", "battery": None},
    ]
