"""Every option of Spark's own Kafka source, read through it and through ``headrace``.

One Spark session carries Spark's spark-sql-kafka-0-10 (``format("kafka")``, from the
jars of jvm/spark/) beside ``format("headrace")``; both read the same topics of one
built-in broker. For each option of Spark's documentation (batch reads, and streaming
ones under ``trigger(availableNow=True)``) the two must return the same rows, or both
fail, or ``headrace`` fails with an error naming an option it does not have.

The topic's records carry known timestamps (record ``i`` at ``BASE + i * STEP``), so a
time in the middle selects half of them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, unique
from spark_jars import spark_kafka_jars
from spark_jvm import QUICK_SPARK_CONF

from headrace.spark_bridge import spark_session

pytestmark = pytest.mark.slow

RECORDS = 100
PARTITIONS = 3
BASE = 1_700_000_000_000
STEP = 1_000
MIDDLE = BASE + RECORDS // 2 * STEP  # records 50..99 are at or after it
COLUMNS = "topic, partition, offset, key, value, timestamp, timestampType"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = spark_session(
        "kafka-source-options",
        conf={
            **QUICK_SPARK_CONF,
            "spark.jars": spark_kafka_jars(),
            "spark.sql.shuffle.partitions": "2",
        },
    )
    session.sparkContext.setLogLevel("OFF")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def bootstrap(broker_process: BrokerProcess) -> str:
    return broker_process.bootstrap


def fill(bootstrap: str, topic: str) -> None:
    """Record ``i`` into partition ``i % PARTITIONS`` at ``BASE + i * STEP``, with a
    header, so every partition holds early and late records."""
    from confluent_kafka import Producer

    Confluent().create_topic(bootstrap, topic, PARTITIONS)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(
            topic,
            key=f"k{i}".encode(),
            value=f"v{i}".encode(),
            partition=i % PARTITIONS,
            timestamp=BASE + i * STEP,
            headers=[("n", str(i).encode()), ("empty", None)],
        )
    assert producer.flush(30) == 0


@pytest.fixture(scope="module")
def topic(bootstrap: str) -> str:
    name = unique("opts")
    fill(bootstrap, name)
    return name


def load(spark: Any, fmt: str, bootstrap: str, options: dict[str, str]) -> Any:
    reader = spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def rows(frame: Any, columns: str = COLUMNS) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in frame.selectExpr(*columns.split(", ")).collect())


def both(
    spark: Any, bootstrap: str, options: dict[str, str], columns: str = COLUMNS
) -> list[tuple[Any, ...]]:
    """The rows of Spark's source, after checking ``headrace`` returns the same."""
    theirs = rows(load(spark, "kafka", bootstrap, options), columns)
    ours = rows(load(spark, "headrace", bootstrap, options), columns)
    assert ours == theirs
    return theirs


def offsets_json(topic: str, offsets: list[int]) -> str:
    return json.dumps({topic: {str(p): o for p, o in enumerate(offsets)}})


def numbers(found: list[tuple[Any, ...]]) -> list[int]:
    """The record numbers ``i`` of rows (their value is ``v<i>``)."""
    return sorted(int(bytes(r[4])[1:]) for r in found)


# --- batch reads: every case read through both sources ---------------------------


def at(p: int, offsets: range) -> set[int]:
    """The record numbers at ``offsets`` of partition ``p`` (record ``3 * o + p``)."""
    return {PARTITIONS * o + p for o in offsets}


def batch_cases(topic: str) -> dict[str, tuple[dict[str, str], set[int]]]:
    """Each case's options and the record numbers it must return."""
    every = set(range(RECORDS))
    late = str(BASE + 10 * RECORDS * STEP)  # after every record
    return {
        "defaults": ({}, every),
        "earliest..latest": ({"startingOffsets": "earliest", "endingOffsets": "latest"}, every),
        "offsets json": (
            {
                "startingOffsets": offsets_json(topic, [3, -2, 10]),
                "endingOffsets": offsets_json(topic, [20, 5, -1]),
            },
            at(0, range(3, 20)) | at(1, range(5)) | at(2, range(10, 33)),
        ),
        "startingTimestamp": ({"startingTimestamp": str(MIDDLE)}, set(range(50, RECORDS))),
        "endingTimestamp": ({"endingTimestamp": str(MIDDLE)}, set(range(50))),
        "timestamp window": (
            {
                "startingTimestamp": str(BASE + 20 * STEP),
                "endingTimestamp": str(BASE + 70 * STEP),
            },
            set(range(20, 70)),
        ),
        "offsets by timestamp": (
            {
                "startingOffsetsByTimestamp": offsets_json(topic, [MIDDLE, BASE, BASE + 90 * STEP]),
                "endingOffsetsByTimestamp": offsets_json(
                    topic, [BASE + 80 * STEP, MIDDLE, MIDDLE * 2]
                ),
            },
            {i for i in range(50, 80) if i % 3 == 0}
            | {i for i in range(50) if i % 3 == 1}
            | {i for i in range(90, RECORDS) if i % 3 == 2},
        ),
        # Spark's order: a global time, then times per partition, then offsets
        "startingTimestamp first": (
            {
                "startingTimestamp": str(MIDDLE),
                "startingOffsetsByTimestamp": offsets_json(topic, [BASE] * 3),
                "startingOffsets": offsets_json(topic, [30] * 3),
            },
            set(range(50, RECORDS)),
        ),
        "startingOffsetsByTimestamp before startingOffsets": (
            {
                "startingOffsetsByTimestamp": offsets_json(topic, [BASE] * 3),
                "startingOffsets": offsets_json(topic, [30] * 3),
            },
            every,
        ),
        "endingOffsetsByTimestamp before endingOffsets": (
            {
                "endingOffsetsByTimestamp": offsets_json(topic, [MIDDLE] * 3),
                "endingOffsets": offsets_json(topic, [1] * 3),
            },
            set(range(50)),
        ),
        # no record that late: a start at latest by the strategy, an end at the end
        "no match, strategy latest": (
            {"startingTimestamp": late, "startingOffsetsByTimestampStrategy": "latest"},
            set(),
        ),
        "no match in some partitions, strategy LATEST": (
            {
                "startingOffsetsByTimestamp": offsets_json(topic, [MIDDLE, int(late), int(late)]),
                "startingOffsetsByTimestampStrategy": "LATEST",
            },
            {i for i in range(50, RECORDS) if i % 3 == 0},
        ),
        "endingTimestamp after every record": ({"endingTimestamp": late}, every),
        "assign": ({"assign": json.dumps({topic: [0, 2]})}, {i for i in every if i % 3 != 1}),
        "subscribePattern": ({"subscribePattern": f"{topic}.*"}, every),
        # settings that change no row (a trigger's limit: ignored by a batch read)
        "settings": (
            {
                "failOnDataLoss": "false",
                "groupIdPrefix": "mine",
                "kafka.group.id": "fixed-group",
                "kafkaConsumer.pollTimeoutMs": "20000",
                "kafka.client.id": "reader",
                "kafka.isolation.level": "read_uncommitted",
                "maxOffsetsPerTrigger": "7",
            },
            every,
        ),
    }


def cases_frame(spark: Any, fmt: str, bootstrap: str, topic: str) -> Any:
    """Every case's rows in one frame (one Spark job), tagged with the case's name."""
    from pyspark.sql import functions as f

    frames = []
    for name, (options, _) in batch_cases(topic).items():
        subscription = (
            {} if {"assign", "subscribePattern"} & options.keys() else {"subscribe": topic}
        )
        frame = load(spark, fmt, bootstrap, {**subscription, **options})
        frames.append(frame.selectExpr(*COLUMNS.split(", ")).withColumn("case", f.lit(name)))
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionAll(frame)
    return union


def by_case(frame: Any) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for row in frame.collect():
        out.setdefault(row["case"], []).append(tuple(row)[:-1])
    return {name: sorted(found) for name, found in out.items()}


def test_batch_reads_return_what_sparks_source_returns(
    spark: Any, bootstrap: str, topic: str
) -> None:
    theirs = by_case(cases_frame(spark, "kafka", bootstrap, topic))
    ours = by_case(cases_frame(spark, "headrace", bootstrap, topic))
    for name, (_, expected) in batch_cases(topic).items():
        assert set(numbers(theirs.get(name, []))) == expected, name  # the case is meaningful
        assert ours.get(name, []) == theirs.get(name, []), name


def test_a_start_with_no_matching_offset_fails(spark: Any, bootstrap: str, topic: str) -> None:
    late = str(BASE + 10 * RECORDS * STEP)
    for fmt in ("kafka", "headrace"):
        with pytest.raises(Exception, match=r"[Nn]o offset"):
            load(spark, fmt, bootstrap, {"subscribe": topic, "startingTimestamp": late}).collect()


def test_include_headers(spark: Any, bootstrap: str, topic: str) -> None:
    found = both(
        spark,
        bootstrap,
        {"subscribe": topic, "includeHeaders": "true"},
        columns=COLUMNS + ", headers",
    )
    assert len(found) == RECORDS and all(len(r[-1]) == 2 for r in found)


def test_min_partitions_plans_as_spark_does(spark: Any, bootstrap: str, topic: str) -> None:
    """The number of Spark partitions each plans (``getNumPartitions`` plans without
    reading), and the rows of the cut plan."""
    cases: list[dict[str, str]] = [
        {},
        {"minPartitions": "2"},
        {"minPartitions": "7"},
        {"minPartitions": "40"},
        {"minPartitions": "5", "startingTimestamp": str(BASE + 80 * STEP)},
    ]
    for options in cases:
        frames = {
            fmt: load(spark, fmt, bootstrap, {"subscribe": topic, **options})
            for fmt in ("kafka", "headrace")
        }
        counts = {fmt: f.rdd.getNumPartitions() for fmt, f in frames.items()}
        assert counts["headrace"] == counts["kafka"], (options, counts)
        if options.get("minPartitions") == "7":
            assert counts["kafka"] > PARTITIONS  # the plan really cut partitions
            assert rows(frames["headrace"]) == rows(frames["kafka"])


# --- options both refuse, and those only Spark has -------------------------------


@pytest.mark.parametrize(
    ("options", "ours"),
    [
        ({"startingOffsets": "latest"}, "startingOffsets"),
        ({"endingOffsets": "earliest"}, "endingOffsets"),
        ({"startingTimestamp": "soon"}, "startingTimestamp"),
        ({"startingOffsetsByTimestampStrategy": "nearest"}, "startingOffsetsByTimestampStrategy"),
        ({"minPartitions": "0"}, "minPartitions"),
        ({"kafka.auto.offset.reset": "earliest"}, "auto.offset.reset"),
        ({"kafka.key.deserializer": "x"}, "key.deserializer"),
        ({"kafka.value.deserializer": "x"}, "value.deserializer"),
        ({"kafka.enable.auto.commit": "true"}, "enable.auto.commit"),
        ({"kafka.interceptor.classes": "x"}, "interceptor.classes"),
    ],
)
def test_both_refuse(
    spark: Any, bootstrap: str, topic: str, options: dict[str, str], ours: str
) -> None:
    with pytest.raises(Exception):  # noqa: B017 - Spark's own error, any kind
        load(spark, "kafka", bootstrap, {"subscribe": topic, **options}).collect()
    with pytest.raises(Exception, match=ours):
        load(spark, "headrace", bootstrap, {"subscribe": topic, **options}).collect()


def test_partition_sets_must_agree(spark: Any, bootstrap: str, topic: str) -> None:
    for options in (
        {"startingOffsetsByTimestamp": json.dumps({topic: {"0": BASE}})},
        {"startingOffsets": json.dumps({topic: {"0": 1}})},
        {"endingOffsets": json.dumps({topic: {"1": 4}})},
        {
            "startingOffsets": offsets_json(topic, [0, 0, 0]),
            "endingOffsets": json.dumps({topic: {"0": 5}}),
        },
        {
            "startingOffsets": offsets_json(topic, [9, 0, 0]),
            "endingOffsets": offsets_json(topic, [5, 5, 5]),
        },
    ):
        with pytest.raises(Exception):  # noqa: B017 - Spark's own error, any kind
            load(spark, "kafka", bootstrap, {"subscribe": topic, **options}).collect()
        with pytest.raises(Exception, match="Offsets"):
            load(spark, "headrace", bootstrap, {"subscribe": topic, **options}).collect()


@pytest.mark.parametrize(
    "option",
    [
        "fetchOffset.numRetries",
        "fetchOffset.retryIntervalMs",
        "minOffsetsPerTrigger",
        "maxTriggerDelay",
        "maxRecordsPerPartition",
        "startingOffset",  # a typo Spark ignores
    ],
)
def test_options_we_lack_fail_by_name(spark: Any, bootstrap: str, topic: str, option: str) -> None:
    with pytest.raises(Exception, match=option.lower() if option == "startingOffset" else option):
        load(spark, "headrace", bootstrap, {"subscribe": topic, option: "1"}).collect()


# --- streams ---------------------------------------------------------------------


def stream_rows(
    spark: Any, fmt: str, bootstrap: str, options: dict[str, str]
) -> tuple[list[tuple[Any, ...]], int]:
    """Every row one availableNow run of a stream delivers, and its batch count."""
    reader = spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    name = unique(f"q_{fmt}").replace("-", "_")
    query = (
        reader.load()
        .selectExpr(*COLUMNS.split(", "))
        .writeStream.format("memory")
        .queryName(name)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    batches = sum(1 for p in query.recentProgress if p["numInputRows"] > 0)
    return sorted(tuple(r) for r in spark.table(name).collect()), batches


def stream_both(spark: Any, bootstrap: str, options: dict[str, str]) -> list[tuple[Any, ...]]:
    theirs, their_batches = stream_rows(spark, "kafka", bootstrap, options)
    ours, our_batches = stream_rows(spark, "headrace", bootstrap, options)
    assert ours == theirs
    if "maxOffsetsPerTrigger" in options:
        assert our_batches > 1 and their_batches > 1
    return theirs


def test_streams(spark: Any, bootstrap: str, topic: str) -> None:
    started = time.monotonic()
    limited = {"subscribe": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": "40"}
    assert len(stream_both(spark, bootstrap, limited)) == RECORDS
    by_time = {"subscribe": topic, "startingTimestamp": str(MIDDLE)}
    assert numbers(stream_both(spark, bootstrap, by_time)) == list(range(50, RECORDS))
    by_partition = {
        "subscribe": topic,
        "startingOffsetsByTimestamp": offsets_json(topic, [MIDDLE, BASE, BASE]),
    }
    assert len(stream_both(spark, bootstrap, by_partition)) == 17 + 33 + 33
    assert time.monotonic() - started < 120


def test_a_stream_has_no_end(spark: Any, bootstrap: str, topic: str) -> None:
    for option in ("endingOffsets", "endingOffsetsByTimestamp"):
        value = "latest" if option == "endingOffsets" else offsets_json(topic, [BASE] * 3)
        for fmt in ("kafka", "headrace"):
            reader = spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap)
            with pytest.raises(Exception, match=option if fmt == "headrace" else "ending"):
                reader.option("subscribe", topic).option(option, value).load().writeStream.format(
                    "noop"
                ).start().awaitTermination(60)
