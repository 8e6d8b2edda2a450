"""What a pair is: one topology written twice, here in headrace and in KsTopologies.java
in Kafka Streams, under the same id, with the topics both sides read and write.

Kinds are the serdes both sides share: ``"S"`` string and ``"L"`` long values (keys are
always strings); a sink's key may be ``"W<size>"`` (time-windowed, the window's end being
start + size) or ``"SW"`` (session-windowed). Windowed keys are compared rendered as
``key@start/end``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from headrace.dsl import (
    Materialized,
    Serdes,
    StreamsBuilder,
    WindowedSerdes,
    materialized,
)

S, L = Serdes.string(), Serdes.long()

KEYS = ("a", "b", "c", "d")
DIGITS = tuple(range(10))
WORDS = ("x", "ab", "abc", "b", "ca", "bcd")


DAY_MS = 86_400_000


def uncached(retention: int | None = None) -> Materialized:
    """Every update emitted, as Kafka Streams gives it with ``statestore.cache.max.bytes=0``."""
    return materialized(caching=False, retention=retention)


def text(value: Any) -> str:
    """A joiner's rendering of a value, as Java's ``String.valueOf``: ``None`` is "null"."""
    return "null" if value is None else str(value)


@dataclass(frozen=True)
class Source:
    """An input topic: its value kind, the keys and values the generator draws from, and
    whether it is a table (more tombstones, no closing record) or a stream."""

    kind: str = "L"
    keys: tuple[str, ...] = KEYS
    values: tuple[Any, ...] = DIGITS
    table: bool = False


STREAM_L = Source()
STREAM_S = Source("S", values=WORDS)
TABLE_L = Source(table=True)
TABLE_S = Source("S", values=WORDS, table=True)


@dataclass(frozen=True)
class Pair:
    id: str
    build: Callable[[StreamsBuilder], None]
    sources: Mapping[str, Source]
    sinks: Mapping[str, tuple[str, str]]
    closes: bool = False
    """Whether a far-future record ends each stream input, so every window closes."""
    doc: str = field(default="")


PAIRS: dict[str, Pair] = {}


def pair(
    sources: Mapping[str, Source],
    sinks: Mapping[str, tuple[str, str]],
    *,
    closes: bool = False,
) -> Callable[[Callable[[StreamsBuilder], None]], Callable[[StreamsBuilder], None]]:
    """Register the headrace half of a pair under its function's name."""

    def register(build: Callable[[StreamsBuilder], None]) -> Callable[[StreamsBuilder], None]:
        name = build.__name__
        assert name not in PAIRS, f"pair {name} registered twice"
        doc = inspect.getdoc(build) or ""
        assert doc, f"pair {name} needs a docstring saying what it exercises"
        PAIRS[name] = Pair(name, build, dict(sources), dict(sinks), closes, doc)
        return build

    return register


def serde(kind: str) -> Any:
    """The headrace serde of a kind."""
    if kind == "S":
        return S
    if kind == "L":
        return L
    if kind == "SW":
        return WindowedSerdes.session_windowed(S)
    assert kind.startswith("W"), kind
    return WindowedSerdes.time_windowed(S, int(kind[1:]))
