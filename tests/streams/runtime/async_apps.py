"""Topologies with async operators that the crash tests run under ``headrace run``."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

from headrace import AgentApp, AgentStream
from headrace.dsl import Serdes, StreamsBuilder
from headrace.streams import Topology

ASYNC_IN, ASYNC_OUT = "async-in", "async-out"


async def _slow_tag(value: str) -> str:
    """A remote call that answers after 20-60 ms, in no particular order: slow enough
    that a SIGKILL lands while calls are in flight."""
    await asyncio.sleep(random.uniform(0.02, 0.06))
    return f"{value}|done"


def _enrich(name: str, concurrency: int = 16) -> Topology:
    string = Serdes.string()
    builder = StreamsBuilder()
    (
        builder.stream(f"{ASYNC_IN}-{name}", key_serde=string, value_serde=string)
        .map_values_async(_slow_tag, concurrency=concurrency)
        .to(f"{ASYNC_OUT}-{name}", key_serde=string, value_serde=string)
    )
    return builder.build()


def async_alos() -> Topology:
    return _enrich("alos")


def async_eos() -> Topology:
    return _enrich("eos")


def async_smoke() -> Topology:
    return _enrich("smoke")


# A faust-style agent with a table, for the exactly-once crash test of agents.
agents_eos = AgentApp("async-agents-eos")
_string = Serdes.string()
_source = agents_eos.topic(f"{ASYNC_IN}-agents", key_serde=_string, value_serde=_string)
_sink = agents_eos.topic(f"{ASYNC_OUT}-agents", key_serde=_string, value_serde=_string)
_seen = agents_eos.table("seen", default=int)


@agents_eos.agent(_source, sink=_sink, concurrency=16)
async def _count_and_tag(stream: AgentStream) -> AsyncIterator[str]:
    """Tags each value after a slow call with how many records of its key the table
    has counted: exact counts after a crash mean no record was counted twice."""
    async for key, value in stream:
        tagged = await _slow_tag(value)
        _seen[key] += 1
        yield f"{tagged}|{_seen[key]}"


def async_rebalance() -> Topology:
    # Slow enough (4 calls per task) that the input outlasts a second instance's start.
    return _enrich("rebalance", concurrency=4)
