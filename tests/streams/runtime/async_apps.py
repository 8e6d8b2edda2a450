"""Topologies with async operators that the crash tests run under ``headrace run``."""

from __future__ import annotations

import asyncio
import random

from headrace.dsl import Serdes, StreamsBuilder
from headrace.streams import Topology

ASYNC_IN, ASYNC_OUT = "async-in", "async-out"


async def _slow_tag(value: str) -> str:
    """A remote call that answers after 20-60 ms, in no particular order: slow enough
    that a SIGKILL lands while calls are in flight."""
    await asyncio.sleep(random.uniform(0.02, 0.06))
    return f"{value}|done"


def _enrich(name: str) -> Topology:
    string = Serdes.string()
    builder = StreamsBuilder()
    (
        builder.stream(f"{ASYNC_IN}-{name}", key_serde=string, value_serde=string)
        .map_values_async(_slow_tag, concurrency=16)
        .to(f"{ASYNC_OUT}-{name}", key_serde=string, value_serde=string)
    )
    return builder.build()


def async_alos() -> Topology:
    return _enrich("alos")


def async_eos() -> Topology:
    return _enrich("eos")


def async_smoke() -> Topology:
    return _enrich("smoke")
