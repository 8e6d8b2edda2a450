"""The ``headrace`` data source, the Delta hand-off and SQL, with one local Spark session.

Spark takes seconds to start, so every Spark test of the package lives here and shares
the module's session and broker.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import pydantic
import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, unique
from spark_jvm import QUICK_SPARK_CONF

from headrace import cli
from headrace.spark_bridge import (
    DeltaSink,
    decode_json,
    export_topic,
    read_delta,
    register_delta_tables,
    spark_schema,
    spark_session,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = spark_session(
        "headrace-tests", conf={**QUICK_SPARK_CONF, "spark.sql.shuffle.partitions": "2"}
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def bootstrap(broker_process: BrokerProcess) -> str:
    return broker_process.bootstrap


def make_topic(
    bootstrap: str, n: int, partitions: int = 3, start: int = 0
) -> tuple[str, list[tuple[int, int]]]:
    topic = unique("spark")
    Confluent().create_topic(bootstrap, topic, partitions)
    return topic, produce(bootstrap, topic, n, start)


def produce(bootstrap: str, topic: str, n: int, start: int = 0) -> list[tuple[int, int]]:
    return Confluent().produce(
        bootstrap,
        topic,
        [
            (f"user-{i % 7}".encode(), json.dumps({"n": i, "page": f"/p{i % 3}"}).encode())
            for i in range(start, start + n)
        ],
    )


def source(spark: Any, bootstrap: str, topic: str, *, stream: bool = False, **options: str) -> Any:
    reader = spark.readStream if stream else spark.read
    reader = reader.format("headrace").option("kafka.bootstrap.servers", bootstrap)
    reader = reader.option("subscribe", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def delta_rows(path: Path) -> list[tuple[int, int]]:
    table = deltalake.DeltaTable(str(path)).to_pyarrow_table(columns=["partition", "offset"])
    return sorted(zip(table["partition"].to_pylist(), table["offset"].to_pylist(), strict=True))


# ---------------------------------------------------------------------------- batch reads
def test_batch_read_matches_what_was_produced(spark: Any, bootstrap: str) -> None:
    topic, placed = make_topic(bootstrap, 600)
    frame = source(spark, bootstrap, topic)
    assert frame.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
    ]
    got = frame.select("partition", "offset", "key", "value", "topic").collect()
    assert sorted((r.partition, r.offset) for r in got) == sorted(placed)
    assert {r.topic for r in got} == {topic}
    by_n = {json.loads(bytes(r.value))["n"]: bytes(r.key) for r in got}
    assert by_n == {i: f"user-{i % 7}".encode() for i in range(600)}
    # One Spark partition per topic-partition, as Spark's own Kafka source plans.
    assert frame.rdd.getNumPartitions() == 3


def test_one_consumer_reads_every_partition_with_its_own_columns(
    spark: Any, bootstrap: str
) -> None:
    """``maxPartitions=1``: one Spark partition, so one consumer for all three
    topic-partitions; every record once, with its partition and offset, inside the
    offset ranges asked for."""
    topic, placed = make_topic(bootstrap, 450)
    high = {p: max(o for q, o in placed if q == p) + 1 for p in range(3)}
    start = json.dumps({topic: {"0": 4, "1": -2, "2": 11}})
    end = json.dumps({topic: {"0": -1, "1": 9, "2": high[2] - 3}})
    frame = source(
        spark, bootstrap, topic, maxPartitions="1", startingOffsets=start, endingOffsets=end
    )
    assert frame.rdd.getNumPartitions() == 1
    got = frame.select("partition", "offset", "key", "value").collect()
    expected = (
        [(0, o) for o in range(4, high[0])]
        + [(1, o) for o in range(0, 9)]
        + [(2, o) for o in range(11, high[2] - 3)]
    )
    assert sorted((r.partition, r.offset) for r in got) == expected
    # Each row's columns are its own record's: a key always lands on one partition, and
    # one producer's records keep their order within a partition, so n rises with offset.
    partition_of: dict[bytes, set[int]] = {}
    for r in got:
        n = json.loads(bytes(r.value))["n"]
        assert bytes(r.key) == f"user-{n % 7}".encode()
        partition_of.setdefault(bytes(r.key), set()).add(r.partition)
    assert all(len(parts) == 1 for parts in partition_of.values())
    for p in range(3):
        ns = [
            json.loads(bytes(r.value))["n"]
            for r in sorted(got, key=lambda r: r.offset)
            if r.partition == p
        ]
        assert ns == sorted(ns)


def test_batch_read_honours_offset_ranges(spark: Any, bootstrap: str) -> None:
    topic, placed = make_topic(bootstrap, 300)
    start = json.dumps({topic: {"0": 10, "1": -2, "2": 5}})
    end = json.dumps({topic: {"0": 20, "1": 3, "2": -1}})
    got = (
        source(spark, bootstrap, topic, startingOffsets=start, endingOffsets=end)
        .select("partition", "offset")
        .collect()
    )
    high = {p: max(o for q, o in placed if q == p) + 1 for p in range(3)}
    expected = (
        [(0, o) for o in range(10, 20)]
        + [(1, o) for o in range(0, 3)]
        + [(2, o) for o in range(5, high[2])]
    )
    assert sorted((r.partition, r.offset) for r in got) == expected


def test_assign_and_headers(spark: Any, bootstrap: str) -> None:
    topic = unique("headers")
    Confluent().create_topic(bootstrap, topic, 2)
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap})
    p.produce(topic, value=b"a", partition=1, headers=[("trace", b"t-1"), ("empty", None)])
    p.produce(topic, value=b"b", partition=0)
    p.flush(10)
    frame = (
        spark.read.format("headrace")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("assign", json.dumps({topic: [1]}))
        .option("includeHeaders", "true")
        .load()
    )
    rows = frame.collect()
    assert [bytes(r.value) for r in rows] == [b"a"]
    assert [(h.key, h.value) for h in rows[0].headers] == [("trace", b"t-1"), ("empty", None)]


def test_read_committed_hides_aborted_records(spark: Any, bootstrap: str) -> None:
    from confluent_kafka import Producer

    topic = unique("txn")
    Confluent().create_topic(bootstrap, topic, 2)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("tx")})
    producer.init_transactions(10)
    for fate in ("commit", "abort", "commit", "abort"):
        producer.begin_transaction()
        for i in range(20):
            producer.produce(topic, value=f"{fate}-{i}".encode(), partition=i % 2)
        producer.flush(10)
        (producer.commit_transaction if fate == "commit" else producer.abort_transaction)(10)

    def values(**options: Any) -> list[str]:
        return sorted(
            bytes(r.value).decode()
            for r in source(spark, bootstrap, topic, **options).select("value").collect()
        )

    assert values() == sorted([f"commit-{i}" for i in range(20)] * 2)  # the default
    assert len(values(**{"isolation.level": "read_uncommitted"})) == 80


# ------------------------------------------------------------------------ JSON decoding
class PageView(pydantic.BaseModel):
    n: int
    page: str
    referrer: str | None = None


def test_decode_json_with_a_pydantic_model(spark: Any, bootstrap: str) -> None:
    topic, _ = make_topic(bootstrap, 90)
    schema = spark_schema(PageView)
    assert [(f.name, f.dataType.simpleString()) for f in schema.fields] == [
        ("n", "bigint"),
        ("page", "string"),
        ("referrer", "string"),
    ]
    decoded = decode_json(source(spark, bootstrap, topic), PageView)
    assert decoded.columns == [
        "key",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "n",
        "page",
        "referrer",
    ]
    counts = {r.page: r["count"] for r in decoded.groupBy("page").count().collect()}
    assert counts == {"/p0": 30, "/p1": 30, "/p2": 30}
    assert decoded.agg({"n": "sum"}).collect()[0][0] == sum(range(90))


# ------------------------------------------------------------------- streaming into Delta
def run_available_now(frame: Any, sink: DeltaSink, checkpoint: Path) -> None:
    query = (
        frame.writeStream.foreachBatch(sink.foreach_batch())
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)


def test_stream_into_delta_survives_stop_and_restart(
    spark: Any, bootstrap: str, tmp_path: Path
) -> None:
    """Keyed by batch id, not offsets, so a source that re-read or skipped records on
    restart would show up as duplicates or gaps instead of being filtered out."""
    topic, placed = make_topic(bootstrap, 500)
    sink = DeltaSink(str(tmp_path / "delta"), app_id="stream")
    checkpoint = tmp_path / "checkpoint"
    frame = source(
        spark, bootstrap, topic, stream=True, startingOffsets="earliest", maxOffsetsPerTrigger="150"
    )
    run_available_now(frame, sink, checkpoint)
    assert delta_rows(tmp_path / "delta") == sorted(placed)
    batches = len(list((checkpoint / "commits").iterdir()))
    assert batches >= 4  # 500 records at most 150 a batch

    # Stopped in the middle of a continuous run, then restarted from its checkpoint.
    more = produce(bootstrap, topic, 400, start=500)
    query = (
        frame.writeStream.foreachBatch(sink.foreach_batch())
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="0 seconds")
        .start()
    )
    deadline = time.monotonic() + 60
    while len(delta_rows(tmp_path / "delta")) < 650 and time.monotonic() < deadline:
        time.sleep(0.2)
    query.stop()
    assert len(delta_rows(tmp_path / "delta")) >= 650  # the continuous run made progress
    latest = produce(bootstrap, topic, 100, start=900)
    run_available_now(frame, sink, checkpoint)
    assert delta_rows(tmp_path / "delta") == sorted(placed + more + latest)  # no dup, no gap


def test_failed_micro_batch_retried_does_not_duplicate(
    spark: Any, bootstrap: str, tmp_path: Path
) -> None:
    """A batch that committed to Delta and then failed is run again by Spark on restart
    (same batch id, same offsets); the sink recognises it and writes nothing."""
    topic, placed = make_topic(bootstrap, 300)
    path = tmp_path / "views"
    sink = DeltaSink(str(path), app_id="page-counts")
    write = sink.foreach_batch()  # by batch id: the frame is an aggregate, no offsets
    failures: list[int] = []

    def flaky(frame: Any, batch_id: int) -> None:
        write(frame, batch_id)
        if batch_id == 1 and not failures:
            failures.append(batch_id)
            raise RuntimeError("worker lost after the Delta commit")

    counts = decode_json(
        source(
            spark,
            bootstrap,
            topic,
            stream=True,
            startingOffsets="earliest",
            maxOffsetsPerTrigger="100",
        ),
        "n long, page string",
    ).select("page", "n")
    checkpoint = tmp_path / "checkpoint"

    def start() -> Any:
        return (
            counts.writeStream.foreachBatch(flaky)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )

    query = start()
    with pytest.raises(Exception, match="worker lost"):
        query.awaitTermination(120)
    assert failures == [1]
    assert sink.committed_batch() == 1  # batch 1 reached Delta before the failure
    start().awaitTermination(120)
    table = deltalake.DeltaTable(str(path)).to_pyarrow_table()
    assert sorted(table["n"].to_pylist()) == list(range(300))  # each record exactly once
    assert sorted(placed) == sorted(
        (r.partition, r.offset) for r in source(spark, bootstrap, topic).collect()
    )


# ------------------------------------------------------------------------- reading back
def test_exported_table_reads_back_for_sql(
    spark: Any, bootstrap: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topic, _ = make_topic(bootstrap, 120)
    path = tmp_path / "views"
    export_topic(bootstrap, topic, str(path), value_format="json", commit_records=50)
    frame = read_delta(spark, str(path))
    assert frame.count() == 120
    register_delta_tables(spark, {"views": str(path)})
    got = spark.sql("SELECT page, count(*) AS c FROM views GROUP BY page ORDER BY page")
    assert [(r.page, r.c) for r in got.collect()] == [("/p0", 40), ("/p1", 40), ("/p2", 40)]
    # An older version of the table is a smaller snapshot. The first commit buffers chunks
    # of at most commit_records rows until it holds commit_records: 50 to 99 rows, as the
    # fetches fall.
    assert 50 <= read_delta(spark, str(path), version=0).count() < 100

    code = cli.main(
        [
            "spark",
            "sql",
            "SELECT page, count(*) AS views FROM v GROUP BY page ORDER BY page",
            "--table",
            f"v={path}",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0].split() == ["page", "views"]
    assert "/p2" in out and "40" in out
    assert spark.sql("SELECT 1").collect()[0][0] == 1  # the shared session is still up


def test_empty_and_partitioned_tables_read_back(spark: Any, tmp_path: Path) -> None:
    import pyarrow as pa

    deltalake.write_deltalake(
        str(tmp_path / "empty"),
        pa.table({"a": pa.array([], pa.int64()), "b": pa.array([], pa.string())}),
    )
    empty = read_delta(spark, str(tmp_path / "empty"))
    assert empty.columns == ["a", "b"] and empty.count() == 0
    deltalake.write_deltalake(
        str(tmp_path / "parts"),
        pa.table({"day": ["d1", "d1", "d2"], "views": [1, 2, 3]}),
        partition_by=["day"],
    )
    parts = read_delta(spark, str(tmp_path / "parts"))
    assert sorted((r.day, r.views) for r in parts.collect()) == [("d1", 1), ("d1", 2), ("d2", 3)]


# ------------------------------------------------------------------------- secured reads
@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from secured_broker import start_secured_broker

    broker = start_secured_broker(tmp_path_factory.mktemp("secured-spark"))
    try:
        yield broker
    finally:
        broker.process.stop()


def test_batch_read_over_sasl_ssl_with_spark_kafka_options(spark: Any, secured: Any) -> None:
    """The options a Spark user writes for Spark's own Kafka source (Java client keys)."""
    import asyncio

    from aiokafka import AIOKafkaProducer

    topic, bootstrap = unique("spark-sec"), secured.address("SASL_SSL")
    admin = [
        "--bootstrap-servers",
        bootstrap,
        "--command-config",
        str(secured.command_config("admin")),
    ]
    secured.headrace("topics", "create", topic, "--partitions", "2", *admin)
    secured.allow("User:streams", "--topic", topic, operation="Read", pattern="literal")
    secured.allow(
        "User:streams", "--group", "headrace-spark-bridge", operation="Describe", pattern="literal"
    )

    async def fill() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, **secured.sasl_ssl("admin").aiokafka_options()
        )
        await producer.start()
        try:
            for i in range(20):
                await producer.send(topic, f"v{i}".encode())
            await producer.flush()
        finally:
            await producer.stop()

    asyncio.run(fill())
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required"
        ' username="streams" password="streams-secret";'
    )
    options: dict[str, Any] = {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": jaas,
        "kafka.ssl.truststore.location": str(secured.certs.ca),
    }
    frame = source(spark, bootstrap, topic, **options)
    values = sorted(bytes(row.value).decode() for row in frame.select("value").collect())
    assert values == sorted(f"v{i}" for i in range(20))
