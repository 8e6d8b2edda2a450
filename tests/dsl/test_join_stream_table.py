"""Stream-table and stream-global-table joins through the test driver."""

from __future__ import annotations

from typing import Any

import pytest

from headrace.dsl import GlobalKTable, Serdes, StreamsBuilder, TopologyBuildError, materialized
from headrace.state import Stores
from headrace.streams import BatchProcessor, Rec, Topology, TopologyError
from headrace.streams.testing import TestRecord, TopologyTestDriver

S, J = Serdes.string(), Serdes.json()
APP = {"application_id": "app"}


def enrich(click: str, user: Any) -> str:
    return f"{click}@{user['name'] if user else None}"


def test_stream_table_join_reads_the_table_as_of_each_record() -> None:
    builder = StreamsBuilder()
    users = builder.table("users", key_serde=S, value_serde=J)
    clicks = builder.stream("clicks", key_serde=S, value_serde=S)
    clicks.join(users, enrich).to("inner", value_serde=S)
    clicks.left_join(users, enrich).to("left", value_serde=S)
    with TopologyTestDriver(builder.build(), APP) as d:
        u = d.create_input_topic("users", S, J)
        c = d.create_input_topic("clicks", S, S)
        c.pipe_input("ann", "home")  # no profile yet
        u.pipe_input("ann", {"name": "Ann"})
        c.pipe_input("ann", "cart")
        u.pipe_input("ann", {"name": "Annie"})  # a table update alone emits nothing
        c.pipe_input("ann", "pay")
        u.pipe_input("ann", None)  # deleted
        c.pipe_input("ann", "bye")
        c.pipe_input(None, "anon")
        c.pipe_input("ann", None)
        inner = d.create_output_topic("inner", S, S).read_key_values_to_list()
        left = d.create_output_topic("left", S, S).read_key_values_to_list()
    assert inner == [("ann", "cart@Ann"), ("ann", "pay@Annie")]
    assert left == [
        ("ann", "home@None"),
        ("ann", "cart@Ann"),
        ("ann", "pay@Annie"),
        ("ann", "bye@None"),
        (None, "anon@None"),
    ]


def test_out_of_order_stream_records_see_the_current_table_and_keep_their_timestamps() -> None:
    builder = StreamsBuilder()
    users = builder.table("users", key_serde=S, value_serde=J)
    builder.stream("clicks", key_serde=S, value_serde=S).join(users, enrich).to(
        "out", value_serde=S
    )
    with TopologyTestDriver(builder.build(), APP) as d:
        d.create_input_topic("users", S, J).pipe_input(TestRecord("ann", {"name": "Ann"}, 1_000))
        d.create_input_topic("clicks", S, S).pipe_input(TestRecord("ann", "early", 10))
        records = d.create_output_topic("out", S, S).read_records_to_list()
    assert [(r.value, r.timestamp) for r in records] == [("early@Ann", 10)]


def test_join_with_a_filtered_and_mapped_table_uses_its_value_getter() -> None:
    builder = StreamsBuilder()
    users = builder.table("users", key_serde=S, value_serde=J)
    adults = users.filter(lambda k, v: v["age"] >= 18).map_values(lambda v: v["name"])
    builder.stream("clicks", key_serde=S, value_serde=S).join(
        adults, lambda k, click, name: f"{k}:{click}:{name}", with_key=True
    ).to("out", value_serde=S)
    with TopologyTestDriver(builder.build(), APP) as d:
        u = d.create_input_topic("users", S, J)
        u.pipe_input("ann", {"name": "Ann", "age": 30})
        u.pipe_input("kid", {"name": "Kid", "age": 9})
        c = d.create_input_topic("clicks", S, S)
        c.pipe_input("ann", "a")
        c.pipe_input("kid", "b")
        assert d.create_output_topic("out", S, S).read_values_to_list() == ["ann:a:Ann"]


def test_a_rekeyed_stream_is_repartitioned_before_the_lookup() -> None:
    builder = StreamsBuilder()
    users = builder.table("users", key_serde=S, value_serde=J)
    (
        builder.stream("clicks", key_serde=S, value_serde=J)
        .map(lambda k, v: (v["user"], v["page"]))
        .join(users, enrich, key_serde=S, value_serde=S, name="enrich")
        .to("out", value_serde=S)
    )
    topology = builder.build()
    assert "enrich-left-repartition" in topology.internal_topics
    assert builder.copartition_groups() == [("enrich", ("enrich-left-repartition", "users"))]
    with TopologyTestDriver(topology, APP) as d:
        d.create_input_topic("users", S, J).pipe_input("ann", {"name": "Ann"})
        d.create_input_topic("clicks", S, J).pipe_input("c1", {"user": "ann", "page": "/home"})
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == [
            ("ann", "/home@Ann")
        ]


def test_stream_table_argument_errors() -> None:
    builder = StreamsBuilder()
    users = builder.table("users", key_serde=S, value_serde=J)
    clicks = builder.stream("clicks")
    with pytest.raises(TopologyBuildError, match="outer_join needs another stream"):
        clicks.outer_join(users, enrich, None)  # type: ignore[call-overload]  # on purpose
    with pytest.raises(TopologyBuildError, match=r"join\(table, joiner\)"):
        clicks.join(users, enrich, enrich)  # type: ignore[call-overload]
    with pytest.raises(TopologyBuildError, match="cannot join a stream with a str"):
        clicks.join("users", enrich)  # type: ignore[call-overload]


# -- global tables ---------------------------------------------------------------------


def build_global() -> tuple[StreamsBuilder, GlobalKTable]:
    builder = StreamsBuilder()
    countries = builder.global_table(
        "countries", key_serde=S, value_serde=S, materialized=materialized("countries-store")
    )
    # Clicks keyed by user, joined by the country in the value: no repartition needed.
    clicks = builder.stream("clicks", key_serde=S, value_serde=J)
    clicks.join(
        countries, lambda user, v: v.get("country"), lambda v, name: f"{v['page']} in {name}"
    ).to("inner", value_serde=S)
    clicks.left_join(
        countries, lambda user, v: v.get("country"), lambda v, name: f"{v['page']} in {name}"
    ).to("left", value_serde=S)
    return builder, countries


def test_stream_global_join_by_a_selected_key_needs_no_repartition() -> None:
    builder, countries = build_global()
    assert countries.queryable_store_name == "countries-store"
    topology = builder.build()
    assert topology.internal_topics == {}
    assert builder.copartition_groups() == []
    assert topology.global_stores == ("countries-store",)
    # The global topic belongs to no sub-topology: its partitions never make tasks.
    assert [sub.source_topics for sub in topology.subtopologies()] == [("clicks",)]
    with TopologyTestDriver(topology, APP) as d:
        d.create_input_topic("countries", S, S).pipe_key_value_list(
            [("no", "Norway"), ("it", "Italy")]
        )
        clicks = d.create_input_topic("clicks", S, J)
        clicks.pipe_input("ann", {"page": "/a", "country": "no"})
        clicks.pipe_input("bob", {"page": "/b", "country": "se"})
        clicks.pipe_input("cid", {"page": "/c"})
        d.create_input_topic("countries", S, S).pipe_input("no", None)
        clicks.pipe_input("ann", {"page": "/d", "country": "no"})
        assert d.create_output_topic("inner", S, S).read_key_values_to_list() == [
            ("ann", "/a in Norway")
        ]
        assert d.create_output_topic("left", S, S).read_key_values_to_list() == [
            ("ann", "/a in Norway"),
            ("bob", "/b in None"),
            ("cid", "/c in None"),
            ("ann", "/d in None"),
        ]
        store = d.get_key_value_store("countries-store")
        assert list(store.all()) == [("it", "Italy")]
        assert d.get_changelog("countries-store") == []  # the topic is the changelog


def test_a_task_reading_a_global_store_it_was_not_given_refuses_to_start(tmp_path: Any) -> None:
    from headrace.streams import TaskExecutor

    builder, _ = build_global()
    topology = builder.build()
    task = TaskExecutor(topology, 0, 0, APP, state_dir=tmp_path)
    with pytest.raises(TopologyError, match="reads global stores"):
        task.init()
    global_task = TaskExecutor(topology, -1, 0, APP, state_dir=tmp_path)
    global_task.init()
    assert global_task.task_id == "global" and global_task.reads("countries")
    task = TaskExecutor(topology, 0, 0, APP, state_dir=tmp_path, global_stores=global_task.stores)
    task.init()
    task.close()
    global_task.close()


class _Upsert(BatchProcessor):
    def process_batch(self, batch: list[Rec]) -> None:
        store = self.context.get_state_store("kv")
        for k, v, _ts, _h, _o in batch:
            store.put(k, v)


def test_processor_api_global_store_rules() -> None:
    with pytest.raises(TopologyError, match="logging disabled"):
        Topology().add_global_store(Stores.key_value_store("kv"), "src", "t", "upd", _Upsert)
    topology = Topology().add_global_store(
        Stores.key_value_store("kv").with_logging_disabled(), "src", "t", "upd", _Upsert
    )
    assert topology.subtopologies() == []
    with TopologyTestDriver(topology, APP) as d:
        d.create_input_topic("t").pipe_input(b"k", b"v")
        assert d.get_key_value_store("kv").get(b"k") == b"v"
