"""The topologies of the exactly-once fault campaign (``eos_campaign.py``), one per kind,
as ``headrace run`` targets. Each reads its topics' names from ``EOS_CAMPAIGN_PREFIX``,
so every case of the campaign has topics of its own on a shared broker.

Keys and values are strings. Every operator keeps one output per input (or per closed
window), so that the campaign's reader can check the output record for record.
"""

from __future__ import annotations

import os

from headrace import JoinWindows, Serdes, StreamsBuilder, TimeWindows, Topology, materialized
from headrace.dsl import Windowed, until_window_closes

WINDOW_MS = 2_000
"""Tumbling windows of the windowed kinds; with no grace: event time only grows."""


def topics() -> tuple[str, str, str]:
    """(input, second input for the join, output) of this process's case."""
    prefix = os.environ["EOS_CAMPAIGN_PREFIX"]
    return f"{prefix}-in", f"{prefix}-in2", f"{prefix}-out"


def window_name(window: Windowed[str], count: int) -> tuple[str, str]:
    return f"{window.key}@{window.window.start}", str(count)


def stateless() -> Topology:
    """Drops every fifth record, tags the rest: ``"7" -> "7:14"``."""
    source, _, sink = topics()
    string = Serdes.string()
    builder = StreamsBuilder()
    (
        builder.stream(source, key_serde=string, value_serde=string)
        .filter(lambda _k, v: int(v) % 5 != 0)
        .map_values(lambda v: f"{v}:{int(v) * 2}")
        .to(sink, key_serde=string, value_serde=string)
    )
    return builder.build()


def stateful() -> Topology:
    """The running count per key, one update per record (no cache)."""
    source, _, sink = topics()
    string = Serdes.string()
    builder = StreamsBuilder()
    (
        builder.stream(source, key_serde=string, value_serde=string)
        .group_by_key()
        .count(materialized=materialized("counts").with_caching_disabled())
        .to_stream()
        .map_values(str)
        .to(sink, key_serde=string, value_serde=string)
    )
    return builder.build()


def windowed() -> Topology:
    """One final count per key and window (``emit_final``)."""
    source, _, sink = topics()
    string = Serdes.string()
    builder = StreamsBuilder()
    (
        builder.stream(source, key_serde=string, value_serde=string)
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, 0))
        .emit_final()
        .count(materialized=materialized("window-counts"))
        .to_stream()
        .map(window_name)
        .to(sink, key_serde=string, value_serde=string)
    )
    return builder.build()


def suppressed() -> Topology:
    """One final count per key and window, by ``suppress(until_window_closes())``."""
    source, _, sink = topics()
    string = Serdes.string()
    builder = StreamsBuilder()
    (
        builder.stream(source, key_serde=string, value_serde=string)
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, 0))
        .count(materialized=materialized("suppressed-counts"))
        .suppress(until_window_closes())
        .to_stream()
        .map(window_name)
        .to(sink, key_serde=string, value_serde=string)
    )
    return builder.build()


JOIN_DIFFERENCE_MS = 100
JOIN_GRACE_MS = 3_600_000
"""A grace longer than the input: whichever side a task happens to read first, no record
is ever too late to join."""


def joined() -> Topology:
    """An inner stream-stream join of the two inputs: ``"L7" + "R7" -> "L7+R7"``."""
    left, right, sink = topics()
    string = Serdes.string()
    builder = StreamsBuilder()
    other = builder.stream(right, key_serde=string, value_serde=string)
    (
        builder.stream(left, key_serde=string, value_serde=string)
        .join(
            other,
            lambda v, o: f"{v}+{o}",
            JoinWindows.of_time_difference_and_grace(JOIN_DIFFERENCE_MS, JOIN_GRACE_MS),
        )
        .to(sink, key_serde=string, value_serde=string)
    )
    return builder.build()


def payments() -> Topology:
    """``headrace.examples.payments``: running balances ``"<balance>,<payments>"``."""
    from headrace.examples.payments import build

    source, _, sink = topics()
    return build(source=source, sink=sink).build()
