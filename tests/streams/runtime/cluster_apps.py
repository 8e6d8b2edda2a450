"""Topologies ``test_on_kafka_cluster.py`` runs with ``headrace run`` against three Apache
Kafka nodes. Each reads its topics' names from ``CLUSTER_JOB_PREFIX``.

Keys and values are strings.
"""

from __future__ import annotations

import os

from headrace import Serdes, StreamsBuilder, TimeWindows, Topology, materialized
from headrace.dsl import Windowed

WINDOW_MS = 10_000
GRACE_MS = 600_000
"""Longer than the input lasts: records reach a repartition partition from several
upstream tasks, slightly out of event-time order, and none may be dropped as late."""


def topics() -> tuple[str, str]:
    prefix = os.environ["CLUSTER_JOB_PREFIX"]
    return f"{prefix}-in", f"{prefix}-out"


def payments() -> Topology:
    """``headrace.examples.payments``: running balances ``"<balance>,<payments>"``."""
    from headrace.examples.payments import build

    source, sink = topics()
    return build(source=source, sink=sink).build()


def window_name(window: Windowed[str], count: int) -> tuple[str, str]:
    return f"{window.key}@{window.window.start}", str(count)


def page_windows() -> Topology:
    """Views per page and tumbling window: the input is keyed by user with the page as
    value, so ``group_by`` the page goes through a repartition topic; the count's store
    has a changelog, and every update is sent (no cache), one output per input."""
    source, sink = topics()
    string = Serdes.string()
    builder = StreamsBuilder()
    (
        builder.stream(source, key_serde=string, value_serde=string)
        .group_by(lambda _user, page: page, key_serde=string, value_serde=string)
        .windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS))
        .count(materialized=materialized("page-window-counts").with_caching_disabled())
        .to_stream()
        .map(window_name)
        .to(sink, key_serde=string, value_serde=string)
    )
    return builder.build()
