"""``df.write.format("headrace")`` and ``writeStream.format("headrace")`` into topics.

Every record written is read back with confluent-kafka (librdkafka), not with our own
source, and registry-framed values with confluent-kafka's own AvroDeserializer. The
streaming test kills the Spark driver (SIGKILL) in the middle of micro-batches and
restarts the query from its checkpoint, then counts and compares what a read_committed
consumer sees.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from kafka_clients import Confluent, present, unique
from registryproc import broker_with_registry
from spark_jvm import QUICK_SPARK_CONF, quick_spark_env

from headrace.spark_bridge import spark_session
from headrace.spark_bridge._sink_options import parse_sink_options
from headrace.spark_bridge._sink_producer import MarkedTransaction
from headrace.spark_bridge._sink_records import Records

pytestmark = pytest.mark.slow

JOB = Path(__file__).with_name("stream_write_job.py")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with broker_with_registry(tmp_path_factory.mktemp("spark-write") / "data") as both:
        yield both


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = spark_session(
        "headrace-write-tests", conf={**QUICK_SPARK_CONF, "spark.sql.shuffle.partitions": "2"}
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def read_all(bootstrap: str, topic: str, *, within: float = 60.0) -> list[Any]:
    """Every record of ``topic`` as a read_committed librdkafka consumer sees it."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("check"),
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        parts = sorted(meta.partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        got: list[Any] = []
        ended: set[int] = set()
        deadline = time.monotonic() + within
        while len(ended) < len(parts):
            assert time.monotonic() < deadline, f"{topic}: partitions {ended} of {parts} ended"
            for m in consumer.consume(10_000, 0.5):
                error = m.error()
                if error is None:
                    got.append(m)
                    ended.discard(present(m.partition()))
                elif error.code() == -191:  # end of partition
                    ended.add(present(m.partition()))
                else:
                    raise AssertionError(error)
        return got
    finally:
        consumer.close()


SALE_AVRO = {
    "type": "record",
    "name": "Sale",
    "fields": [{"name": "item", "type": "string"}, {"name": "cents", "type": "long"}],
}
SALE_JSON = {
    "type": "object",
    "properties": {"item": {"type": "string"}, "cents": {"type": "integer"}},
    "required": ["item", "cents"],
}


def writer(frame: Any, bootstrap: str, **options: str) -> Any:
    """A batch write in Append mode: Spark lets a Python data source take only Append or
    Overwrite, where its Kafka sink also takes the default ErrorIfExists."""
    out = frame.write.format("headrace").mode("append")
    out = out.option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        out = out.option(key, value)
    return out


# -- batch ---------------------------------------------------------------------------------


def test_every_row_arrives_with_its_key_value_headers_and_partition(
    spark: Any, cluster: tuple[str, str]
) -> None:
    bootstrap, _ = cluster
    topic = unique("written")
    Confluent().create_topic(bootstrap, topic, 3)
    rows = [
        (
            f"k{i}",
            f"v{i}".encode(),
            i % 3,
            [(f"h{i}", f"hv{i}".encode()), ("same", None)],
        )
        for i in range(3000)
    ]
    frame = spark.createDataFrame(
        rows,
        "key string, value binary, partition int, headers array<struct<key:string,value:binary>>",
    ).repartition(4)
    writer(frame, bootstrap, topic=topic).save()
    got = read_all(bootstrap, topic)
    assert len(got) == 3000
    seen = sorted((m.key().decode(), m.value(), m.partition(), m.headers()) for m in got)
    assert seen == sorted((k, v, p, [(hk, hv) for hk, hv in hs]) for k, v, p, hs in rows)


def test_a_topic_column_routes_rows_and_the_producer_places_keys_by_murmur2(
    spark: Any, cluster: tuple[str, str]
) -> None:
    """No partition column: keys land where Java's producer (Spark's sink) puts them."""
    bootstrap, _ = cluster
    first, second = unique("routed-a"), unique("routed-b")
    for topic in (first, second):
        Confluent().create_topic(bootstrap, topic, 4)
    frame = spark.createDataFrame(
        [(first if i % 2 else second, f"user-{i}", f"value-{i}") for i in range(200)],
        "topic string, key string, value string",
    )
    writer(frame, bootstrap).save()
    for topic, parity in ((first, 1), (second, 0)):
        got = read_all(bootstrap, topic)
        assert sorted(m.value().decode() for m in got) == sorted(
            f"value-{i}" for i in range(200) if i % 2 == parity
        )
        for m in got:
            assert m.partition() == murmur2_partition(m.key(), 4)


def murmur2_partition(key: bytes, partitions: int) -> int:
    """Kafka's DefaultPartitioner for a keyed record: toPositive(murmur2(key)) % n."""
    seed, m, r = 0x9747B28C, 0x5BD1E995, 24
    length = len(key)
    h = (seed ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(key[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail = key[length - length % 4 :]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return (h & 0x7FFFFFFF) % partitions


def test_a_struct_value_is_written_in_avro_through_the_registry(
    spark: Any, cluster: tuple[str, str]
) -> None:
    bootstrap, url = cluster
    topic = unique("avro-written")
    Confluent().create_topic(bootstrap, topic, 2)
    frame = spark.createDataFrame(
        [(f"o{i}", (f"item-{i}", i * 10, i % 2 == 0)) for i in range(50)],
        "key string, value struct<item:string, cents:bigint, vip:boolean>",
    )
    writer(frame, bootstrap, topic=topic, **{"value.format": "avro"}).option(
        "schema.registry.url", url
    ).save()
    got = read_all(bootstrap, topic)
    with SchemaRegistryClient({"url": url}) as registry:
        deserialize = AvroDeserializer(registry)
        context = SerializationContext(topic, MessageField.VALUE)
        values = sorted((deserialize(m.value(), context) for m in got), key=lambda v: v["cents"])
        registered = registry.get_latest_version(f"{topic}-value")
    assert values == [{"item": f"item-{i}", "cents": i * 10, "vip": i % 2 == 0} for i in range(50)]
    # No schema was registered before: the write registered what Spark's to_avro derives.
    assert json.loads(registered.schema.schema_str)["name"] == "topLevelRecord"


@pytest.mark.parametrize("value_format", ["avro", "json-schema"])
def test_a_struct_value_is_written_with_the_subjects_latest_schema(
    spark: Any, cluster: tuple[str, str], value_format: str
) -> None:
    bootstrap, url = cluster
    topic = unique(f"registered-{value_format}")
    subject = unique("sales-value")
    Confluent().create_topic(bootstrap, topic, 1)
    if value_format == "avro":
        schema = Schema(json.dumps(SALE_AVRO), "AVRO")
    else:
        schema = Schema(json.dumps(SALE_JSON), "JSON")
    with SchemaRegistryClient({"url": url}) as registry:
        schema_id = registry.register_schema(subject, schema)
    frame = spark.createDataFrame(
        [(("pen", 150),), (("ink", 900),)], "value struct<item:string, cents:bigint>"
    )
    writer(frame, bootstrap, topic=topic, **{"value.format": value_format}).option(
        "schema.registry.url", url
    ).option("value.subject", subject).save()
    got = read_all(bootstrap, topic)
    with SchemaRegistryClient({"url": url}) as registry:
        if value_format == "avro":
            deserialize: Any = AvroDeserializer(registry)
        else:
            deserialize = JSONDeserializer(None, schema_registry_client=registry)
        context = SerializationContext(topic, MessageField.VALUE)
        values = sorted((deserialize(m.value(), context) for m in got), key=lambda v: v["cents"])
        versions = registry.get_versions(subject)
    assert values == [{"item": "pen", "cents": 150}, {"item": "ink", "cents": 900}]
    # Every value names the registered schema, and the write registered no other.
    assert {int.from_bytes(present(m.value())[1:5], "big") for m in got} == {schema_id}
    assert versions == [1]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"subscribe": "x"}, "subscribe"),
        ({"kafka.value.serializer": "x"}, "value.serializer"),
        ({"kafka.transactional.id": "x"}, "transactional.id"),
        ({"compression": "zstd"}, "compression"),
        ({"value.format": "protobuf"}, "value.format"),
    ],
)
def test_an_option_this_sink_does_not_take_fails_the_write_naming_it(
    spark: Any, cluster: tuple[str, str], options: dict[str, str], named: str
) -> None:
    bootstrap, _ = cluster
    frame = spark.createDataFrame([("a",)], "value string")
    with pytest.raises(Exception, match=named):
        writer(frame, bootstrap, topic=unique("never"), **options).save()


def test_a_failed_delivery_fails_the_write_naming_the_partition(
    spark: Any, cluster: tuple[str, str]
) -> None:
    bootstrap, _ = cluster
    topic = unique("one-partition")
    Confluent().create_topic(bootstrap, topic, 1)
    frame = spark.createDataFrame([("a", 0), ("b", 7)], "value string, partition int")
    with pytest.raises(Exception, match=rf"{topic}/7"):
        writer(frame, bootstrap, topic=topic).save()


def test_columns_of_the_wrong_type_are_refused_as_spark_refuses_them(
    spark: Any, cluster: tuple[str, str]
) -> None:
    bootstrap, _ = cluster
    frame = spark.createDataFrame([(1,)], "value int")
    with pytest.raises(Exception, match="value attribute type must be a StringType or BinaryType"):
        writer(frame, bootstrap, topic=unique("never")).save()
    frame = spark.createDataFrame([("a",)], "value string")
    with pytest.raises(Exception, match="topic option required"):
        writer(frame, bootstrap).save()


# -- streaming -----------------------------------------------------------------------------

FILES, PER_FILE = 10, 10_000  # 100k records, a micro-batch per file
KILLS = ((2, 0.4), (5, 0.8))  # (first micro-batch to kill in, seconds into it)


def start_job(bootstrap: str, topic: str, inputs: Path, checkpoint: Path, log: Path) -> Any:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, str(JOB), bootstrap, topic, str(inputs), str(checkpoint)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=quick_spark_env(os.environ),
            start_new_session=True,  # one process group: the JVM and its workers with it
        )


def kill_during_batch(proc: Any, checkpoint: Path, batch: int, delay: float) -> int:
    """SIGKILL the driver's process group ``delay`` seconds after a micro-batch from
    ``batch`` on was planned, while that batch is still being written (on a machine fast
    enough to finish one sooner, the next is tried with half the delay)."""
    deadline = time.monotonic() + 240
    while True:
        while not (checkpoint / "offsets" / str(batch)).exists():
            assert proc.poll() is None, f"the query ended before micro-batch {batch}"
            assert time.monotonic() < deadline, f"micro-batch {batch} not planned in 240s"
            time.sleep(0.02)
        time.sleep(delay)
        if not (checkpoint / "commits" / str(batch)).exists():
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return batch
        batch, delay = batch + 1, delay / 2


@pytest.mark.slow(seconds=105)
@pytest.mark.timeout(900)  # three Spark drivers, each starting its JVM and workers
def test_a_streaming_write_is_exactly_once_across_driver_kills(
    cluster: tuple[str, str], tmp_path: Path
) -> None:
    bootstrap, _ = cluster
    topic = unique("stream-written")
    Confluent().create_topic(bootstrap, topic, 3)
    inputs, checkpoint, log = tmp_path / "in", tmp_path / "checkpoint", tmp_path / "job.log"
    inputs.mkdir()
    expected = [f"record-{i:06d}" for i in range(FILES * PER_FILE)]
    for f in range(FILES):
        lines = expected[f * PER_FILE : (f + 1) * PER_FILE]
        (inputs / f"part-{f:03d}.txt").write_text("".join(f"{line}\n" for line in lines))
    for batch, delay in KILLS:
        proc = start_job(bootstrap, topic, inputs, checkpoint, log)
        try:
            kill_during_batch(proc, checkpoint, batch, delay)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    proc = start_job(bootstrap, topic, inputs, checkpoint, log)
    try:
        assert proc.wait(timeout=400) == 0, log.read_text()[-4000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert "done" in log.read_text()
    got = read_all(bootstrap, topic, within=120)
    values = sorted(present(m.value()).decode() for m in got)
    assert len(values) == len(expected), f"{len(values) - len(set(values))} duplicates"
    assert values == expected
    assert all(m.key() == m.value() for m in got)


@pytest.mark.parametrize("broker", ["headrace", "apache-kafka"])
def test_a_tasks_transaction_starts_without_waiting_out_librdkafkas_retry_timer(
    request: pytest.FixtureRequest, cluster: tuple[str, str], broker: str
) -> None:
    """Each streaming task starts a fresh transactional producer. librdkafka asks for its
    producer id again only every 500 ms when its first ask finds no broker connected,
    which left about one task in three waiting half a second (on either broker); the
    sink's init no longer does. A task's start takes tens of milliseconds here, so a
    start of 0.45 s or more is that timer, and three of twenty would be too many."""
    if broker == "headrace":
        bootstrap = cluster[0]
    else:
        bootstrap = request.getfixturevalue("kafka_cluster_1").bootstrap
    topic = unique("started")
    Confluent().create_topic(bootstrap, topic, 2)
    options = parse_sink_options({"kafka.bootstrap.servers": bootstrap, "topic": topic})
    starts = []
    for batch in range(5):
        for task in range(4):  # the same ids batch after batch, as a query's tasks
            name = f"{topic}-{task}"
            began = time.monotonic()
            txn = MarkedTransaction(options, name, name, (topic, 0))
            starts.append(time.monotonic() - began)
            try:
                assert not txn.already_written(batch)
                values: list[bytes | None] = [b"x"]
                assert txn.write([Records([topic], [task % 2], [None], values, [None])], batch) == 1
            finally:
                txn.close()
    waited = [round(s, 2) for s in starts if s >= 0.45]
    assert len(waited) < 3, f"{len(waited)} of {len(starts)} starts waited: {waited}"


@pytest.mark.parametrize("broker", ["headrace", "apache-kafka"])
def test_a_replayed_task_finds_its_marker_and_an_abandoned_transaction_is_aborted(
    request: pytest.FixtureRequest, cluster: tuple[str, str], broker: str
) -> None:
    """The streaming task's protocol without Spark, on our broker and on Apache Kafka
    4.4: a producer of a killed driver left a transaction open; the replayed task fences
    it (its records are never read), writes once, and a second replay writes nothing."""
    if broker == "headrace":
        bootstrap = cluster[0]
    else:
        bootstrap = request.getfixturevalue("kafka_cluster_1").bootstrap
    topic = unique("marked")
    Confluent().create_topic(bootstrap, topic, 2)
    options = parse_sink_options({"kafka.bootstrap.servers": bootstrap, "topic": topic})
    name = unique("headrace-spark-query")
    zombie = Producer({"bootstrap.servers": bootstrap, "transactional.id": name})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    for i in range(10):
        zombie.produce(topic, f"abandoned-{i}".encode(), partition=i % 2)
    assert zombie.flush(30) == 0

    def records(n: int) -> Records:
        values: list[bytes | None] = [f"batch-7-{i}".encode() for i in range(n)]
        return Records([topic] * n, [i % 2 for i in range(n)], [None] * n, values, [None] * n)

    for attempt in range(2):
        txn = MarkedTransaction(options, name, name, (topic, 0))
        try:
            if attempt == 0:
                assert not txn.already_written(7)
                assert txn.write([records(100)], 7) == 100
            else:
                assert txn.already_written(7)
                assert not txn.already_written(8)
        finally:
            txn.close()
    with pytest.raises(KafkaException):  # fenced: its records stay aborted
        zombie.commit_transaction(30)
    del zombie  # its client would keep reconnecting after the module's broker stops
    values = sorted(present(m.value()).decode() for m in read_all(bootstrap, topic))
    assert values == sorted(f"batch-7-{i}" for i in range(100))
