"""CogroupedKStream: several grouped streams aggregated into one table, as Kafka
Streams' ``KGroupedStream.cogroup``.

``grouped_a.cogroup(agg_a).cogroup(grouped_b, agg_b).aggregate(initializer)`` keeps one
aggregate per key (per window, for ``windowed_by``); a record of stream ``a`` updates it
with ``agg_a(key, value, aggregate)``, one of ``b`` with ``agg_b``. The streams' value
types may differ; the aggregate's is one.

How it is built: each grouped stream is read where its aggregations would read it (its
own repartition topic, if its key may have changed), its records are tagged with the
index of their aggregator, the tagged streams are merged, and one ordinary aggregation
of the merged stream folds each value in with the aggregator its tag names. The stores,
caching, changelogs, output timestamps, late records and ``suppress`` are therefore the
grouped-stream aggregations' own.

Null keys are skipped; null values are skipped where Kafka Streams' aggregation of that
kind skips them (plain and sliding-window aggregations) and aggregated where it takes
them (time and session windows).

One difference from Kafka Streams remains: there, every cogrouped stream has its own
windowed aggregation processor and so its own stream time, and a record is late
relative to the newest record of its own stream; here the streams share one stream time
(the newest record of any of them), so a record of a lagging stream is judged late by
the other streams' time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, overload

from typing_extensions import TypeVar

from headrace.state import Windowed

from . import _operators as ops
from ._errors import TopologyBuildError
from ._graph import GraphNode, ProcessorGraphNode
from ._late import LateCallback
from ._materialized import Materialized
from ._type_vars import K, V
from ._windows import AnyWindows, SessionWindows, SlidingWindows, TimeWindows

if TYPE_CHECKING:
    from ._grouped import KGroupedStream
    from ._ktable import KTable

Aggregator = Callable[[Any, Any, Any], Any]
VA = TypeVar("VA", default=Any)  # the aggregate's type


def _tag(index: int, skip_null_values: bool) -> ops.BatchFn:
    """Tag each value with the index of its aggregator; drop what the aggregation skips."""
    if skip_null_values:
        return lambda b: [
            (k, (index, v), t, h, o) for k, v, t, h, o in b if k is not None and v is not None
        ]
    return lambda b: [(k, (index, v), t, h, o) for k, v, t, h, o in b if k is not None]


def _transform(fn: ops.BatchFn) -> Callable[[], ops.Transform]:
    return lambda: ops.Transform(fn)


def _dispatch(aggregators: tuple[Aggregator, ...]) -> Aggregator:
    def aggregate(key: Any, tagged: tuple[int, Any], aggregate: Any) -> Any:
        return aggregators[tagged[0]](key, tagged[1], aggregate)

    return aggregate


class CogroupedKStream(Generic[K, VA]):
    """Grouped streams to aggregate into one table; see the module docstring."""

    __slots__ = ("_inputs",)

    def __init__(self, inputs: tuple[tuple[KGroupedStream[Any, Any], Aggregator], ...]) -> None:
        self._inputs = inputs

    def cogroup(
        self, grouped: KGroupedStream[K, V], aggregator: Callable[[K, V, VA], VA]
    ) -> CogroupedKStream[K, VA]:
        """Add ``grouped``, whose records update the aggregate with ``aggregator(key,
        value, aggregate)``. Adding a grouped stream again replaces its aggregator, as in
        Kafka Streams."""
        if grouped.builder is not self._inputs[0][0].builder:
            raise TopologyBuildError("cannot cogroup streams of two different builders")
        if any(g is grouped for g, _ in self._inputs):
            return CogroupedKStream(
                tuple((g, aggregator if g is grouped else a) for g, a in self._inputs)
            )
        return CogroupedKStream((*self._inputs, (grouped, aggregator)))

    # -- what the aggregations build on -------------------------------------------------

    def _merged(self, skip_null_values: bool, name: str | None) -> KGroupedStream[K, Any]:
        """The tagged, merged stream, grouped (it needs no further repartition)."""
        from ._grouped import KGroupedStream
        from ._kstream import KStream

        first = self._inputs[0][0]
        builder = first.builder
        tags: list[GraphNode] = []
        for index, (grouped, _aggregator) in enumerate(self._inputs):
            # A grouping with no name gets its repartition topic named after the cogroup,
            # or a generated name (stable while the program is).
            topic_name = grouped.name or (
                f"{name}-{index}" if name else builder.new_name("COGROUPKSTREAM-REPARTITION-")
            )
            parent = grouped.input_node(topic_name)
            tag = ProcessorGraphNode(
                builder.new_name("COGROUPKSTREAM-TAG-"),
                (parent,),
                supplier=_transform(_tag(index, skip_null_values)),
            )
            tags.append(builder.add_node(tag))
        merge = builder.add_node(
            ProcessorGraphNode(
                builder.new_name("COGROUPKSTREAM-MERGE-"),
                tuple(tags),
                supplier=lambda: ops.Transform(ops.pass_through),
            )
        )
        key_serde = next((g.key_serde for g, _ in self._inputs if g.key_serde is not None), None)
        stream: KStream[K, Any] = KStream(
            builder, merge, key_serde, None, repartition_required=False
        )
        return KGroupedStream(stream, key_serde, None, None)

    def _aggregator(self) -> Aggregator:
        return _dispatch(tuple(a for _, a in self._inputs))

    # -- operators ----------------------------------------------------------------------

    def aggregate(
        self,
        initializer: Callable[[], VA],
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, VA]:
        """One aggregate per key, from ``initializer()``, updated by each stream's
        aggregator; kept in a key-value store as ``KGroupedStream.aggregate`` keeps it."""
        stem = name or (materialized.name if materialized is not None else None)
        grouped = self._merged(True, stem)
        return grouped.aggregate(
            initializer, self._aggregator(), materialized=materialized, name=name
        )

    @overload
    def windowed_by(self, windows: SessionWindows) -> SessionWindowedCogroupedKStream[K, VA]: ...

    @overload
    def windowed_by(
        self, windows: TimeWindows | SlidingWindows
    ) -> TimeWindowedCogroupedKStream[K, VA]: ...

    def windowed_by(
        self, windows: AnyWindows
    ) -> TimeWindowedCogroupedKStream[K, VA] | SessionWindowedCogroupedKStream[K, VA]:
        """Aggregate per window: ``TimeWindows``, ``SlidingWindows`` or ``SessionWindows``."""
        if isinstance(windows, SessionWindows):
            return SessionWindowedCogroupedKStream(self, windows)
        return TimeWindowedCogroupedKStream(self, windows)


class TimeWindowedCogroupedKStream(Generic[K, VA]):
    """A cogroup aggregated per time or sliding window."""

    __slots__ = ("_cogrouped", "_windows")

    def __init__(
        self, cogrouped: CogroupedKStream[K, VA], windows: TimeWindows | SlidingWindows
    ) -> None:
        self._cogrouped = cogrouped
        self._windows = windows

    def aggregate(
        self,
        initializer: Callable[[], VA],
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
        on_late: LateCallback | None = None,
    ) -> KTable[Windowed[K], VA]:
        """One aggregate per key and window, as ``TimeWindowedKStream.aggregate``."""
        cogrouped = self._cogrouped
        stem = name or (materialized.name if materialized is not None else None)
        # Sliding-window aggregations skip null values, time windows aggregate them.
        grouped = cogrouped._merged(isinstance(self._windows, SlidingWindows), stem)
        return grouped.windowed_by(self._windows).aggregate(
            initializer,
            cogrouped._aggregator(),
            materialized=materialized,
            name=name,
            on_late=on_late,
        )


class SessionWindowedCogroupedKStream(Generic[K, VA]):
    """A cogroup aggregated per session."""

    __slots__ = ("_cogrouped", "_windows")

    def __init__(self, cogrouped: CogroupedKStream[K, VA], windows: SessionWindows) -> None:
        self._cogrouped = cogrouped
        self._windows = windows

    def aggregate(
        self,
        initializer: Callable[[], VA],
        merger: Callable[[K, VA, VA], VA],
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
        on_late: LateCallback | None = None,
    ) -> KTable[Windowed[K], VA]:
        """One aggregate per key and session; ``merger(key, left, right)`` combines the
        aggregates of sessions a record joins, as ``SessionWindowedKStream.aggregate``."""
        cogrouped = self._cogrouped
        stem = name or (materialized.name if materialized is not None else None)
        grouped = cogrouped._merged(False, stem)
        return grouped.windowed_by(self._windows).aggregate(
            initializer,
            cogrouped._aggregator(),
            merger,
            materialized=materialized,
            name=name,
            on_late=on_late,
        )
