"""Spark reads registry-encoded topics into typed columns (``decode_registry``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka_clients import unique
from registryproc import broker_with_registry
from spark_jvm import QUICK_SPARK_CONF

from headrace import Serdes
from headrace.examples import shop_pb2
from headrace.spark_bridge import decode_registry, spark_session

V1 = {
    "type": "record",
    "name": "Sale",
    "fields": [{"name": "item", "type": "string"}, {"name": "cents", "type": "long"}],
}
V2 = {
    "type": "record",
    "name": "Sale",
    "fields": [*V1["fields"], {"name": "vip", "type": "boolean", "default": False}],
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with broker_with_registry(tmp_path_factory.mktemp("spark-registry") / "data") as both:
        yield both


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = spark_session(
        "headrace-registry-tests", conf={**QUICK_SPARK_CONF, "spark.sql.shuffle.partitions": "2"}
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def produce(bootstrap: str, topic: str, values: list[bytes | None]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for value in values:
        producer.produce(topic, value=value)
    assert producer.flush(30) == 0


def read(spark: Any, bootstrap: str, topic: str) -> Any:
    return (
        spark.read.format("headrace")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
    )


def test_avro_values_of_two_schema_versions_become_typed_columns(
    spark: Any, cluster: tuple[str, str]
) -> None:
    bootstrap, url = cluster
    topic = unique("sales")
    old, new = Serdes.avro(V1, url), Serdes.avro(V2, url)
    values = [
        old.serialize(topic, {"item": "pen", "cents": 150}),
        new.serialize(topic, {"item": "ink", "cents": 900, "vip": True}),
        None,
    ]
    produce(bootstrap, topic, values)
    frame = decode_registry(read(spark, bootstrap, topic), url, f"{topic}-value")
    types = dict(frame.dtypes)
    assert (types["item"], types["cents"], types["vip"]) == ("string", "bigint", "boolean")
    frame.createOrReplaceTempView("sales")
    rows = spark.sql(
        "SELECT item, cents, vip FROM sales WHERE item IS NOT NULL ORDER BY offset"
    ).collect()
    # The v1 record reads with v2's default: the latest schema shapes every row.
    assert [tuple(r) for r in rows] == [("pen", 150, False), ("ink", 900, True)]
    assert spark.sql("SELECT count(*) FROM sales WHERE item IS NULL").first()[0] == 1


def test_protobuf_values_become_typed_columns(spark: Any, cluster: tuple[str, str]) -> None:
    bootstrap, url = cluster
    topic = unique("customers")
    serde = Serdes.protobuf(shop_pb2.Customer, url)
    produce(
        bootstrap,
        topic,
        [
            serde.serialize(
                topic,
                shop_pb2.Customer(
                    id="c1", name="Ada", tier=3, address=shop_pb2.Customer.Address(city="Oslo")
                ),
            )
        ],
    )
    frame = decode_registry(read(spark, bootstrap, topic), url, f"{topic}-value")
    assert dict(frame.dtypes)["tier"] == "int"
    row = frame.select("id", "tier", "address.city").first()
    assert tuple(row) == ("c1", 3, "Oslo")


def test_a_value_that_does_not_decode_fails_the_query(
    spark: Any, cluster: tuple[str, str], tmp_path: Path
) -> None:
    bootstrap, url = cluster
    topic = unique("broken")
    Serdes.avro(V1, url).serialize(topic, {"item": "x", "cents": 1})  # registers the subject
    produce(bootstrap, topic, [b"not framed"])
    frame = decode_registry(read(spark, bootstrap, topic), url, f"{topic}-value")
    with pytest.raises(Exception, match="does not decode"):
        frame.collect()


def test_the_source_option_value_format_gives_typed_columns(
    spark: Any, cluster: tuple[str, str]
) -> None:
    bootstrap, url = cluster
    topic = unique("sales-source")
    serde = Serdes.avro(V2, url)
    produce(bootstrap, topic, [serde.serialize(topic, {"item": "cap", "cents": 70, "vip": True})])
    frame = (
        spark.read.format("headrace")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("value.format", "avro")
        .option("schema.registry.url", url)
        .load()
    )
    assert [
        c
        for c in frame.columns
        if c not in ("key", "topic", "partition", "offset", "timestamp", "timestampType")
    ] == ["item", "cents", "vip"]
    frame.createOrReplaceTempView("sales_source")
    assert tuple(spark.sql("SELECT item, cents * 2, vip FROM sales_source").first()) == (
        "cap",
        140,
        True,
    )


def test_the_delta_export_writes_avro_fields_as_typed_columns(
    cluster: tuple[str, str], tmp_path: Path
) -> None:
    import deltalake

    from headrace.spark_bridge import export_topic

    bootstrap, url = cluster
    topic = unique("sales-export")
    old, new = Serdes.avro(V1, url), Serdes.avro(V2, url)
    produce(
        bootstrap,
        topic,
        [
            old.serialize(topic, {"item": "pen", "cents": 150}),
            new.serialize(topic, {"item": "ink", "cents": 9, "vip": True}),
        ],
    )
    result = export_topic(
        bootstrap, topic, str(tmp_path / "sales"), value_format="avro", schema_registry_url=url
    )
    assert result.records == 2
    table = deltalake.DeltaTable(str(tmp_path / "sales")).to_pyarrow_table()
    assert str(table.schema.field("cents").type) == "int64"
    assert str(table.schema.field("vip").type) == "bool"
    rows = table.sort_by("offset").select(["item", "cents", "vip"]).to_pylist()
    # The older record reads as the latest schema: its missing field takes the default.
    assert rows == [
        {"item": "pen", "cents": 150, "vip": False},
        {"item": "ink", "cents": 9, "vip": True},
    ]
