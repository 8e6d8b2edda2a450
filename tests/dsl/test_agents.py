"""Faust-style agents through the test driver: the ported examples, tables, timers, errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from headrace import AgentApp, AgentStream, Serdes
from headrace.dsl import TopologyBuildError
from headrace.examples import faust_enrichment, faust_word_count
from headrace.streams import ProcessingError
from headrace.testing import TopologyTestDriver

STR = Serdes.string()


def test_ported_word_count_counts_words_in_a_changelogged_table() -> None:
    with TopologyTestDriver(faust_word_count.app.build()) as driver:
        posts = driver.create_input_topic(faust_word_count.POSTS, STR, STR)
        posts.pipe_input("p1", "the cat the hat")
        posts.pipe_input("p2", "the end")
        out = driver.create_output_topic(faust_word_count.COUNTS, STR, Serdes.long())
        assert out.read_key_values_to_map() == {"the": 3, "cat": 1, "hat": 1, "end": 1}
        changelog = driver.get_changelog("word-counts")
        assert len(changelog) == 6  # every increment logged, so a restart restores it


def test_ported_enrichment_keeps_per_key_order_with_sixteen_lookups_in_flight() -> None:
    orders = [(f"o{i % 5}", {"customer": f"c{i % 3}", "amount": i}) for i in range(40)]
    with TopologyTestDriver(faust_enrichment.app.build()) as driver:
        driver.create_input_topic(faust_enrichment.ORDERS, STR, Serdes.json()).pipe_key_value_list(
            orders
        )
        out = driver.create_output_topic(faust_enrichment.ENRICHED, STR, Serdes.json())
        got = out.read_key_values_to_list()
    assert len(got) == 40
    for key in {k for k, _v in orders}:
        assert [v["amount"] for k, v in got if k == key] == [
            v["amount"] for k, v in orders if k == key
        ]
    assert got[0].value == {"customer": "c0", "amount": 0, "name": None, "tier": "unknown"}
    assert got[1].value["name"] == "Ada"


def test_timer_reads_the_table_of_its_task_and_writes_to_its_sink() -> None:
    app = AgentApp("timers")
    seen = app.topic("seen", key_serde=STR, value_serde=STR)
    totals = app.topic("totals", key_serde=STR, value_serde=Serdes.long())
    table = app.table("per-key", default=int)

    @app.agent(seen)
    async def note(stream: AgentStream) -> None:  # no sink, no yield: a plain coroutine
        async for key, _value in stream:
            table[key] += 1

    @app.timer(1.0, sink=totals)
    async def report() -> tuple[str, int]:
        return ("all", sum(n for _k, n in table.items()))

    with TopologyTestDriver(app.build(), initial_wall_clock=0) as driver:
        driver.create_input_topic("seen", STR, STR).pipe_key_value_list(
            [("a", "x"), ("b", "x"), ("a", "y")]
        )
        out = driver.create_output_topic("totals", STR, Serdes.long())
        assert out.is_empty()
        driver.advance_wall_clock_time(1000)
        assert out.read_key_values_to_list() == [("all", 3)]


def test_an_agent_that_raises_fails_the_record_and_a_fresh_copy_goes_on() -> None:
    app = AgentApp("raises")
    src = app.topic("in", key_serde=STR, value_serde=STR)
    dst = app.topic("out", key_serde=STR, value_serde=STR)

    @app.agent(src, sink=dst)
    async def picky(stream: AgentStream) -> AsyncIterator[str]:
        async for _key, value in stream:
            await asyncio.sleep(0)
            if value == "bad":
                raise ValueError("bad record")
            yield value.upper()

    with TopologyTestDriver(app.build()) as driver:
        source = driver.create_input_topic("in", STR, STR)
        source.pipe_input("k", "ok")
        with pytest.raises(ProcessingError, match="bad record"):
            source.pipe_input("k", "bad")
        source.pipe_input("k", "fine")
        out = driver.create_output_topic("out", STR, STR)
        assert out.read_values_to_list() == ["OK", "FINE"]


def test_agent_declarations_are_checked_when_made() -> None:
    app = AgentApp("checks")
    topic = app.topic("t", value_serde=STR)
    with pytest.raises(TopologyBuildError, match="other serdes"):
        app.topic("t", value_serde=Serdes.json())
    with pytest.raises(TopologyBuildError, match="concurrency"):
        app.agent(topic, concurrency=0)
    with pytest.raises(TopologyBuildError, match="interval"):
        app.timer(0)
    app.table("x")
    with pytest.raises(TopologyBuildError, match="twice"):
        app.table("x")
    with pytest.raises(TopologyBuildError, match="at least one agent"):
        app.build()
