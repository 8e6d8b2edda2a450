"""Table modes end to end through ``headrace broker --table-location`` with the registry
beside it: a compacted topic's table holds the latest value per key (tombstones delete),
and a ``value_schema_latest`` table follows a compatible new schema version with a new
nullable column while a record that does not fit lands in the dead-letter table and the
records after it still land."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from registryproc import broker_with_registry
from table_topic_io import create_topic, produce, table_config, wait_for_table

from headrace import Serdes

pytestmark = pytest.mark.slow  # a broker with the registry and the table writer beside it

SALE_V1: dict[str, Any] = {
    "type": "record",
    "name": "Sale",
    "fields": [{"name": "item", "type": "string"}, {"name": "cents", "type": "long"}],
}
SALE_V2: dict[str, Any] = {
    **SALE_V1,
    "fields": [*SALE_V1["fields"], {"name": "coupon", "type": ["null", "string"], "default": None}],
}
PRICE: dict[str, Any] = {
    "type": "object",
    "properties": {"sku": {"type": "string"}, "cents": {"type": "integer"}},
    "required": ["sku", "cents"],
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, lake: Path) -> Iterator[tuple[str, str]]:
    data = tmp_path_factory.mktemp("modes") / "data"
    with broker_with_registry(data, "--table-location", str(lake)) as both:
        yield both


def produce_pairs(
    bootstrap: str, topic: str, pairs: list[tuple[bytes | None, bytes | None]]
) -> None:
    """Produce (key, value) pairs in order, each to partition 0."""
    produce(bootstrap, topic, [{"key": k, "value": v, "partition": 0} for k, v in pairs])


def test_a_compacted_topic_keeps_the_latest_value_per_key(
    cluster: tuple[str, str], lake: Path
) -> None:
    bootstrap, registry = cluster
    topic = "prices"
    create_topic(
        bootstrap,
        topic,
        1,
        {"cleanup.policy": "compact", **table_config("value_schema_latest", 300)},
    )
    serde = Serdes.json_schema(PRICE, registry)

    def price(sku: str, cents: int) -> bytes:
        return bytes(serde.serialize(topic, {"sku": sku, "cents": cents}))

    produce_pairs(
        bootstrap,
        topic,
        [(b"a", price("a", 100)), (b"b", price("b", 200)), (b"a", price("a", 110))],
    )
    # The three records may arrive in one commit or two: wait for a's second value.
    table = wait_for_table(lake / topic, lambda t: sorted(t["offset"].to_pylist()) == [1, 2])
    assert sorted(table.select(["key", "sku", "cents", "offset"]).to_pylist(), key=str) == sorted(
        [
            {"key": b"a", "sku": "a", "cents": 110, "offset": 2},
            {"key": b"b", "sku": "b", "cents": 200, "offset": 1},
        ],
        key=str,
    )

    # A tombstone deletes b; c arrives; a changes again.
    produce_pairs(
        bootstrap,
        topic,
        [(b"b", None), (b"c", price("c", 300)), (b"a", price("a", 120))],
    )
    table = wait_for_table(
        lake / topic, lambda t: sorted(t["offset"].to_pylist()) == [4, 5], timeout=60
    )
    assert {r["key"]: r["cents"] for r in table.select(["key", "cents"]).to_pylist()} == {
        b"a": 120,
        b"c": 300,
    }
    assert DeltaTable(str(lake / topic)).history(1)[0]["operation"] == "MERGE"


def test_a_new_schema_version_adds_a_column_and_a_misfit_is_dead_lettered(
    cluster: tuple[str, str], lake: Path
) -> None:
    bootstrap, registry = cluster
    topic = "sales"
    create_topic(bootstrap, topic, 1, table_config("value_schema_latest", 300))
    v1 = Serdes.avro(SALE_V1, registry)
    produce_pairs(
        bootstrap,
        topic,
        [(b"1", v1.serialize(topic, {"item": "pen", "cents": 150}))],
    )
    table = wait_for_table(lake / topic, lambda t: t.num_rows == 1)
    assert "coupon" not in table.column_names

    v2 = Serdes.avro(SALE_V2, registry)  # registers the compatible version 2
    produce_pairs(
        bootstrap,
        topic,
        [
            (b"2", v2.serialize(topic, {"item": "ink", "cents": 900, "coupon": "SPRING"})),
            (b"3", b"not an Avro value"),
            (b"4", v1.serialize(topic, {"item": "cap", "cents": 70})),
        ],
    )
    table = wait_for_table(lake / topic, lambda t: t.num_rows == 3 and "coupon" in t.column_names)
    rows = sorted(table.select(["offset", "item", "cents", "coupon"]).to_pylist(), key=str)
    assert rows == [
        {"offset": 0, "item": "pen", "cents": 150, "coupon": None},  # written before v2
        {"offset": 1, "item": "ink", "cents": 900, "coupon": "SPRING"},
        {"offset": 3, "item": "cap", "cents": 70, "coupon": None},
    ]
    assert table.schema.field("coupon").nullable

    letters = wait_for_table(lake / "_dead_letters" / topic, lambda t: t.num_rows >= 1)
    assert letters.num_rows == 1
    letter = letters.to_pylist()[0]
    assert (letter["partition"], letter["offset"], letter["key"]) == (0, 2, b"3")
    assert letter["value"] == b"not an Avro value"
    assert "does not decode" in letter["reason"]
    assert letter["schema_id"] is None
