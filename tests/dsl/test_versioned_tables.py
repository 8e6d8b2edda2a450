"""Versioned tables (KIP-889) and stream-table joins as of the stream record's time
(KIP-914) through the test driver: what a versioned table emits, what a join reads,
how the grace buffer holds and releases records, and what the DSL refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headrace.dsl import KTable, Serdes, StreamsBuilder, TopologyBuildError, materialized
from headrace.state import VersionedRecord
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()


def versioned(b: StreamsBuilder, topic: str = "tbl", history: int = 1000) -> KTable[Any, Any]:
    return b.table(
        topic,
        key_serde=S,
        value_serde=L,
        materialized=materialized("rows", history_retention=history),
    )


def rows(
    driver: TopologyTestDriver, topic: str = "out", value: Any = S
) -> list[tuple[Any, Any, int | None]]:
    out = driver.create_output_topic(topic, S, value).read_records_to_list()
    return [(r.key, r.value, r.timestamp) for r in out]


def test_a_versioned_table_keeps_history_and_forwards_updates_kafka_streams_forwards() -> None:
    b = StreamsBuilder()
    versioned(b, history=100).to_stream().to("out", key_serde=S, value_serde=L)
    with TopologyTestDriver(b.build(), initial_wall_clock=0) as driver:
        table = driver.create_input_topic("tbl", S, L)
        for key, value, ts in [
            ("k", 1, 10),
            ("k", 3, 30),
            ("k", 2, 20),
            ("j", 9, 200),
            ("k", 0, 50),
        ]:
            table.pipe_input(key, value, timestamp=ts)
        table.pipe_input("k", None, timestamp=210)
        store = driver.get_state_store("rows")
        # 2@20 is older than 3@30 yet still forwarded (it went into history); 0@50 is
        # older than the history (200 - 100) and dropped, as Kafka Streams drops it.
        assert rows(driver, value=L) == [
            ("k", 1, 10),
            ("k", 3, 30),
            ("k", 2, 20),
            ("j", 9, 200),
            ("k", None, 210),
        ]
        assert store.get("k") is None
        assert store.get("k", 205) == VersionedRecord(3, 30, 210)
        assert store.get("k", 25) is None  # 25 < 210 - 100: past the history
        assert store.get("j", 199) is None and store.get("j", 250) == VersionedRecord(9, 200, None)


def test_a_stream_record_reads_the_versioned_table_as_of_its_own_timestamp() -> None:
    b = StreamsBuilder()
    stream = b.stream("in", key_serde=S, value_serde=L)
    stream.left_join(versioned(b), lambda v, t: f"{v}+{t}").to("out", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build(), initial_wall_clock=0) as driver:
        table = driver.create_input_topic("tbl", S, L)
        events = driver.create_input_topic("in", S, L)
        table.pipe_input("k", 1, timestamp=100)
        table.pipe_input("k", 2, timestamp=200)
        events.pipe_input("k", 10, timestamp=150)  # late: meets the row of its time
        events.pipe_input("k", 11, timestamp=250)
        events.pipe_input("k", 12, timestamp=50)  # before any row
        assert rows(driver) == [("k", "10+1", 150), ("k", "11+2", 250), ("k", "12+None", 50)]


def test_the_same_join_on_an_unversioned_table_reads_the_latest_row() -> None:
    b = StreamsBuilder()
    table = b.table("tbl", key_serde=S, value_serde=L, materialized=materialized(caching=False))
    b.stream("in", key_serde=S, value_serde=L).join(table, lambda v, t: f"{v}+{t}").to(
        "out", key_serde=S, value_serde=S
    )
    with TopologyTestDriver(b.build(), initial_wall_clock=0) as driver:
        driver.create_input_topic("tbl", S, L).pipe_input("k", 1, timestamp=100)
        driver.create_input_topic("tbl", S, L).pipe_input("k", 2, timestamp=200)
        driver.create_input_topic("in", S, L).pipe_input("k", 10, timestamp=150)
        assert rows(driver) == [("k", "10+2", 150)]


def grace_join(b: StreamsBuilder, grace: int = 100) -> None:
    stream = b.stream("in", key_serde=S, value_serde=L)
    stream.join(versioned(b), lambda v, t: f"{v}+{t}", grace_period=grace, name="j").to(
        "out", key_serde=S, value_serde=S
    )


def test_a_grace_period_holds_stream_records_until_late_table_updates_are_in(
    tmp_path: Path,
) -> None:
    b = StreamsBuilder()
    grace_join(b)
    with TopologyTestDriver(b.build(), {"state_dir": tmp_path}, initial_wall_clock=0) as driver:
        table = driver.create_input_topic("tbl", S, L)
        events = driver.create_input_topic("in", S, L)
        events.pipe_input("k", 10, timestamp=100, headers=(("h", b"1"),))
        table.pipe_input("k", 1, timestamp=90)  # arrives after the stream record, is older
        assert rows(driver) == []  # held: the buffer's time (100) is not past 100 + grace
        events.pipe_input("k", 11, timestamp=150)
        events.pipe_input("k", 12, timestamp=220)  # buffer time 220: releases 100, not 150
        out = driver.create_output_topic("out", S, S).read_records_to_list()
        assert [(r.key, r.value, r.timestamp, r.headers) for r in out] == [
            ("k", "10+1", 100, (("h", b"1"),))
        ]
        events.pipe_input("k", 13, timestamp=50)  # 50 < 220 - 100: joined at once, no row
        assert rows(driver) == []
        events.pipe_input("k", 14, timestamp=400)  # releases 150 and 220
        assert rows(driver) == [("k", "11+1", 150), ("k", "12+1", 220)]
        assert [e.key[:1] for e in driver.get_changelog("j-Buffer")]  # the buffer is logged


def test_held_records_survive_a_restart(tmp_path: Path) -> None:
    b = StreamsBuilder()
    grace_join(b)
    topology = b.build()
    with TopologyTestDriver(topology, {"state_dir": tmp_path}, initial_wall_clock=0) as driver:
        driver.create_input_topic("tbl", S, L).pipe_input("k", 1, timestamp=50)
        driver.create_input_topic("in", S, L).pipe_input("k", 10, timestamp=100)
        assert rows(driver) == []
    b = StreamsBuilder()
    grace_join(b)
    with TopologyTestDriver(b.build(), {"state_dir": tmp_path}, initial_wall_clock=0) as driver:
        driver.create_input_topic("in", S, L).pipe_input("k", 11, timestamp=300)
        assert rows(driver) == [("k", "10+1", 100)]


def test_a_grace_period_needs_a_versioned_table_with_enough_history() -> None:
    b = StreamsBuilder()
    plain = b.table("tbl", key_serde=S, value_serde=L)
    stream = b.stream("in", key_serde=S, value_serde=L)
    with pytest.raises(TopologyBuildError, match="versioned table"):
        stream.join(plain, lambda v, t: v, grace_period=10)
    b = StreamsBuilder()
    table = versioned(b, history=100)
    stream = b.stream("in", key_serde=S, value_serde=L)
    with pytest.raises(TopologyBuildError, match="at least the grace period"):
        stream.join(table, lambda v, t: v, grace_period=101)


def test_history_retention_is_for_tables_read_from_a_topic_or_a_stream() -> None:
    b = StreamsBuilder()
    grouped = b.stream("in", key_serde=S, value_serde=L).group_by_key()
    with pytest.raises(TopologyBuildError, match="versioned"):
        grouped.count(materialized=materialized("counts", history_retention=100))
    b = StreamsBuilder()
    table = b.stream("in", key_serde=S, value_serde=L).to_table(
        materialized=materialized("rows", history_retention=100)
    )
    table.to_stream().to("out", key_serde=S, value_serde=L)
    with TopologyTestDriver(b.build(), initial_wall_clock=0) as driver:
        driver.create_input_topic("in", S, L).pipe_input("k", 1, timestamp=5)
        assert driver.get_state_store("rows").get("k") == VersionedRecord(1, 5, None)


def test_a_table_join_stamps_its_result_with_a_versioned_rows_timestamp() -> None:
    # Kafka Streams stamps a table-table join's result with the larger of the two rows'
    # timestamps; a versioned row's is its version's start.
    b = StreamsBuilder()
    other = b.table("other", key_serde=S, value_serde=L, materialized=materialized(caching=False))
    other.join(versioned(b), lambda o, v: f"{o}+{v}").to_stream().to(
        "out", key_serde=S, value_serde=S
    )
    with TopologyTestDriver(b.build(), initial_wall_clock=0) as driver:
        driver.create_input_topic("tbl", S, L).pipe_input("k", 1, timestamp=500)
        driver.create_input_topic("other", S, L).pipe_input("k", 7, timestamp=100)
        assert rows(driver) == [("k", "7+1", 500)]
