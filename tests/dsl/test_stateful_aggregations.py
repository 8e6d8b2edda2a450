"""count / reduce / aggregate of grouped streams, through the test driver."""

from typing import Any

import pytest

from headrace.dsl import Materialized, Serdes, StreamsBuilder, TopologyBuildError, materialized
from headrace.streams.testing import TestRecord, TopologyTestDriver

S, L, INT = Serdes.string(), Serdes.long(), Serdes.integer()
APP = {"application_id": "app"}


def word_count(store: str = "rocksdb", **kw: Any) -> StreamsBuilder:
    builder = StreamsBuilder()
    (
        builder.stream("lines", key_serde=S, value_serde=S)
        .flat_map_values(lambda line: line.lower().split())
        .group_by(lambda _k, word: word, key_serde=S, value_serde=S, name="words")
        .count(materialized=materialized("word-counts", store=store, **kw))  # type: ignore[arg-type]
        .to_stream()
        .to("counts", value_serde=L)
    )
    return builder


@pytest.mark.parametrize("store", ["rocksdb", "memory"])
def test_word_count_through_a_repartition_topic(store: str) -> None:
    with TopologyTestDriver(word_count(store).build(), APP) as driver:
        lines = driver.create_input_topic("lines", S, S)
        lines.pipe_input("all streams lead to kafka")
        lines.pipe_input("hello kafka streams")
        out = driver.create_output_topic("counts", S, L).read_key_values_to_map()
        assert out == {"all": 1, "streams": 2, "lead": 1, "to": 1, "kafka": 2, "hello": 1}
        repartitioned = driver.create_output_topic(
            "app-words-repartition", S, S
        ).read_values_to_list()
        assert repartitioned == [
            "all",
            "streams",
            "lead",
            "to",
            "kafka",
            "hello",
            "kafka",
            "streams",
        ]
        counts = driver.get_key_value_store("word-counts")
        assert counts.get("kafka") == 2 and counts.get("absent") is None
        assert list(counts.range("k", "m")) == [("kafka", 2), ("lead", 1)]


def test_cache_coalesces_a_batch_and_disabled_cache_emits_every_update() -> None:
    batch = [("k", "a b a"), ("k", "a c")]
    with TopologyTestDriver(word_count().build(), APP) as driver:
        driver.create_input_topic("lines", S, S).pipe_records(batch)
        cached = driver.create_output_topic("counts", S, L).read_key_values_to_list()
    with TopologyTestDriver(word_count(caching=False).build(), APP) as driver:
        driver.create_input_topic("lines", S, S).pipe_records(batch)
        uncached = driver.create_output_topic("counts", S, L).read_key_values_to_list()
    assert sorted(cached) == [("a", 3), ("b", 1), ("c", 1)]
    assert uncached == [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("c", 1)]


def test_changelog_topic_carries_every_flushed_value() -> None:
    with TopologyTestDriver(word_count().build(), APP) as driver:
        lines = driver.create_input_topic("lines", S, S)
        lines.pipe_input("x y")
        lines.pipe_input("x")
        log = driver.get_changelog("word-counts")
        assert [(e.key, L.deserialize("", e.value)) for e in log] == [
            (b"x", 1),
            (b"y", 1),
            (b"x", 2),
        ]
        topic = driver.create_output_topic("app-word-counts-changelog", S, L)
        assert topic.read_key_values_to_list() == [("x", 1), ("y", 1), ("x", 2)]


def test_logging_disabled_writes_no_changelog() -> None:
    with TopologyTestDriver(word_count(logging=False).build(), APP) as driver:
        driver.create_input_topic("lines", S, S).pipe_input("x y")
        assert driver.get_changelog("word-counts") == []
        assert driver.create_output_topic("app-word-counts-changelog").is_empty()


def test_reduce_and_aggregate_by_key_without_repartition() -> None:
    builder = StreamsBuilder()
    grouped = builder.stream("in", key_serde=S, value_serde=INT).group_by_key()
    grouped.reduce(lambda a, b: max(a, b), materialized=Materialized.as_("max")).to_stream().to(
        "max", value_serde=INT
    )
    grouped.aggregate(
        lambda: "",
        lambda k, v, agg: f"{agg}{k}{v};",
        materialized=materialized("log", value_serde=S),
    ).to_stream().to("log", value_serde=S)
    topology = builder.build()
    assert not any("repartition" in t for t in topology.internal_topics)
    with TopologyTestDriver(topology, APP) as driver:
        source = driver.create_input_topic("in", S, INT)
        for key, value in [("a", 3), ("b", 1), ("a", 7), ("a", 5), ("b", None)]:
            source.pipe_input(key, value)
        source.pipe_input(None, 9)  # no key: skipped
        assert driver.create_output_topic("max", S, INT).read_key_values_to_list() == [
            ("a", 3),
            ("b", 1),
            ("a", 7),
            ("a", 7),
        ]
        assert driver.create_output_topic("log", S, S).read_key_values_to_map() == {
            "a": "a3;a7;a5;",
            "b": "b1;",
        }


def test_repartition_names_are_deterministic_and_shared_by_one_grouping() -> None:
    def build() -> Any:
        builder = StreamsBuilder()
        grouped = builder.stream("in", key_serde=S, value_serde=S).group_by(
            lambda k, v: v, key_serde=S
        )
        grouped.count()
        grouped.count()
        return builder.build()

    first, second = build(), build()
    assert first.internal_topics == second.internal_topics
    assert list(first.internal_topics) == ["KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition"]
    assert str(first.describe()) == str(second.describe())


def test_timestamps_of_updates_are_the_newest_record_of_the_key() -> None:
    with TopologyTestDriver(word_count().build(), APP) as driver:
        driver.create_input_topic("lines", S, S).pipe_records(
            [TestRecord("k", "a", 50), TestRecord("k", "a", 40), TestRecord("k", "b", 45)]
        )
        out = driver.create_output_topic("counts", S, L).read_records_to_list()
        assert {(r.key, r.value, r.timestamp) for r in out} == {("a", 2, 50), ("b", 1, 45)}


def test_materialized_rejects_unknown_store_kinds() -> None:
    with pytest.raises(TopologyBuildError):
        materialized("x", store="leveldb")  # type: ignore[arg-type]


class CountingKeys:
    """A string key serde that counts its decodes for the store (its changelog topic)."""

    def __init__(self) -> None:
        self.decoded = 0

    def serialize(self, topic: str, obj: str | None) -> bytes | None:
        return None if obj is None else obj.encode()

    def deserialize(self, topic: str, data: bytes | None) -> str | None:
        if topic.endswith("-changelog"):
            self.decoded += 1
        return None if data is None else data.decode()


def test_an_aggregate_with_no_node_downstream_decodes_nothing_when_its_cache_flushes() -> None:
    # Nobody reads its updates, so a flush writes and logs them and forwards nothing
    # (before, every flushed entry was decoded into a Change for no child at all).
    keys = CountingKeys()
    builder = StreamsBuilder()
    builder.stream("in", key_serde=keys, value_serde=L).group_by_key().aggregate(
        lambda: 0,
        lambda _k, v, total: total + v,
        materialized=materialized("totals", value_serde=L, caching=True),
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("in", keys, L)
        for i in range(30):
            source.pipe_input(f"k{i % 7}", i)
        assert keys.decoded == 0  # the test driver commits (and flushes) as it goes
        store = driver.get_key_value_store("totals")
        assert store.get("k3") == sum(i for i in range(30) if i % 7 == 3)
