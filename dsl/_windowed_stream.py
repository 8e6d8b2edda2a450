"""Windowed grouped streams: aggregations per key and window.

``TimeWindowedKStream`` takes ``TimeWindows`` (tumbling, hopping) or ``SlidingWindows``;
``SessionWindowedKStream`` takes ``SessionWindows``. Their tables are keyed by
``Windowed(key, Window(start, end))`` and their store is a window (or session) store,
queryable by key and time range. ``emit_final()`` switches an aggregation to one final
result per window (``_final``); ``on_late`` is called for every record dropped as late.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic

from headrace.state import Windowed

from ._aggregate_base import AggregateSpec
from ._folds import AggregateFold, CountFold, Fold, ReduceFold
from ._graph import TableGraphNode
from ._ktable import KTable
from ._late import LateCallback
from ._materialized import Materialized
from ._serdes import Serdes
from ._session_aggregate import SessionWindowAggregate
from ._sliding_aggregate import SlidingWindowAggregate
from ._suppress import Suppressed
from ._type_vars import VR, K, V
from ._window_aggregate import TimeWindowAggregate
from ._windowed_serdes import SessionWindowedSerde, TimeWindowedSerde
from ._windows import SessionWindows, SlidingWindows, TimeWindows

if TYPE_CHECKING:
    from ._grouped import KGroupedStream


@dataclass(frozen=True)
class _Emit:
    final: bool = False
    idle_close_ms: int | None = None


class _WindowedBase(Generic[K, V]):
    """What time- and session-windowed streams share: ``count`` and ``reduce``, and the
    node, store and spec an aggregation builds; each kind supplies ``_aggregate``."""

    _grouped: KGroupedStream[Any, Any]
    _emit: _Emit

    def _node(
        self,
        prefix: str,
        name: str | None,
        store: Materialized,
        stores: tuple[Any, ...],
        make: Callable[[TableGraphNode], Any],
    ) -> TableGraphNode:
        builder = self._grouped.builder
        parent = self._grouped.input_node(store.store_name)
        node = TableGraphNode(name or builder.new_name(prefix), (parent,), store_builders=stores)
        node.supplier = lambda: make(node)
        node.final_store = dataclasses.replace(
            store,
            name=f"{store.store_name}-stream-time",
            key_serde=Serdes.bytes(),
            value_serde=Serdes.long(),
            caching=False,
        ).key_value_store()
        node.emit_final = self._emit.final
        node.idle_close_ms = self._emit.idle_close_ms
        builder.add_node(node)
        return node

    def _store(
        self, prefix: str, materialized: Materialized | None, value_serde: Any
    ) -> Materialized:
        return (materialized or Materialized()).resolve(
            self._grouped.builder.new_name(f"{prefix}STATE-STORE-"),
            self._grouped.key_serde,
            value_serde,
        )

    def _spec(self, store: Materialized, fold: Fold, on_late: LateCallback | None) -> AggregateSpec:
        return AggregateSpec(
            store.store_name,
            store.key_serde,
            store.value_serde,
            fold,
            late=self._grouped.builder.late_records,
            on_late=on_late,
        )

    def _aggregate(
        self,
        prefix: str,
        fold: Fold,
        materialized: Materialized | None,
        value_serde: Any,
        name: str | None,
        on_late: LateCallback | None,
    ) -> KTable[Windowed[K], Any]:
        raise NotImplementedError

    def count(
        self,
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
        on_late: LateCallback | None = None,
    ) -> KTable[Windowed[K], int]:
        return self._aggregate(
            "KSTREAM-AGGREGATE-", CountFold(), materialized, Serdes.long(), name, on_late
        )

    def reduce(
        self,
        reducer: Callable[[V, V], V],
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
        on_late: LateCallback | None = None,
    ) -> KTable[Windowed[K], V]:
        return self._aggregate(
            "KSTREAM-REDUCE-",
            ReduceFold(reducer),
            materialized,
            self._grouped.value_serde,
            name,
            on_late,
        )


class TimeWindowedKStream(_WindowedBase[K, V]):
    __slots__ = ("_emit", "_grouped", "_windows")

    def __init__(
        self,
        grouped: KGroupedStream[Any, Any],
        windows: TimeWindows | SlidingWindows,
        emit: _Emit | None = None,
    ) -> None:
        self._grouped = grouped
        self._windows = windows
        self._emit = emit or _Emit()

    def emit_final(self, *, idle_close: int | timedelta | None = None) -> TimeWindowedKStream[K, V]:
        """Emit one final result per window when it closes, nothing before; with
        ``idle_close``, close windows on wall-clock time once the input is that idle."""
        suppressed = Suppressed.until_window_closes(idle_close=idle_close)
        return TimeWindowedKStream(
            self._grouped, self._windows, _Emit(True, suppressed.idle_close_ms)
        )

    def _aggregate(
        self,
        prefix: str,
        fold: Fold,
        materialized: Materialized | None,
        value_serde: Any,
        name: str | None,
        on_late: LateCallback | None,
    ) -> KTable[Windowed[K], Any]:
        windows = self._windows
        store = self._store(prefix, materialized, value_serde)
        spec = self._spec(store, fold, on_late)
        size = windows.store_window_size
        retention = store._retention(windows.default_retention(), size + windows.grace_ms)
        if isinstance(windows, SlidingWindows):
            # Each window's newest record time, beside its aggregate, as Kafka Streams keeps
            # it (ValueAndTimestamp). It replaces the record buffer older versions kept
            # (the "-buffer" store): an upgraded app starts this store empty, and the
            # windows it had take no further records (new ones are made beside them).
            lookback = 2 * windows.time_difference_ms + windows.grace_ms
            if store.retention_ms is not None:
                lookback = store.retention_ms
            times = dataclasses.replace(
                store, name=f"{store.store_name}-window-times", value_serde=Serdes.long()
            )
            node = self._node(
                prefix,
                name,
                store,
                (
                    store.window_store(size, retention),
                    times.window_store(size, retention).with_caching_disabled(),
                ),
                lambda n: SlidingWindowAggregate(
                    n, spec, windows, retention, times.store_name, lookback
                ),
            )
        else:
            time_windows = windows
            node = self._node(
                prefix,
                name,
                store,
                (store.window_store(size, retention, timestamped=True),),
                lambda n: TimeWindowAggregate(n, spec, time_windows, retention),
            )
        return KTable(
            self._grouped.builder,
            node,
            TimeWindowedSerde(store.key_serde, size),
            store.value_serde,
            store_name=store.store_name,
            windows=windows,
            origin=node,
        )

    def aggregate(
        self,
        initializer: Callable[[], VR],
        aggregator: Callable[[K, V, VR], VR],
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
        on_late: LateCallback | None = None,
    ) -> KTable[Windowed[K], VR]:
        return self._aggregate(
            "KSTREAM-AGGREGATE-",
            AggregateFold(initializer, aggregator),
            materialized,
            None,
            name,
            on_late,
        )


class SessionWindowedKStream(_WindowedBase[K, V]):
    __slots__ = ("_emit", "_grouped", "_windows")

    def __init__(
        self,
        grouped: KGroupedStream[Any, Any],
        windows: SessionWindows,
        emit: _Emit | None = None,
    ) -> None:
        self._grouped = grouped
        self._windows = windows
        self._emit = emit or _Emit()

    def emit_final(
        self, *, idle_close: int | timedelta | None = None
    ) -> SessionWindowedKStream[K, V]:
        suppressed = Suppressed.until_window_closes(idle_close=idle_close)
        return SessionWindowedKStream(
            self._grouped, self._windows, _Emit(True, suppressed.idle_close_ms)
        )

    def _aggregate(
        self,
        prefix: str,
        fold: Fold,
        materialized: Materialized | None,
        value_serde: Any,
        name: str | None,
        on_late: LateCallback | None,
    ) -> KTable[Windowed[K], Any]:
        windows = self._windows
        store = self._store(prefix, materialized, value_serde)
        spec = self._spec(store, fold, on_late)
        minimum = windows.gap_ms + windows.grace_ms + 1
        retention = store._retention(windows.default_retention(), minimum)
        # How far back Kafka Streams' session store lets the aggregation see: its retention
        # is gap + grace unless the store names one (headrace keeps at least a day).
        lookback = windows.gap_ms + windows.grace_ms
        if store.retention_ms is not None:
            lookback = store.retention_ms
        node = self._node(
            prefix,
            name,
            store,
            (store.session_store(retention, minimum),),
            lambda n: SessionWindowAggregate(n, spec, windows, retention, lookback),
        )
        return KTable(
            self._grouped.builder,
            node,
            SessionWindowedSerde(store.key_serde),
            store.value_serde,
            store_name=store.store_name,
            windows=windows,
            origin=node,
        )

    def aggregate(
        self,
        initializer: Callable[[], VR],
        aggregator: Callable[[K, V, VR], VR],
        merger: Callable[[K, VR, VR], VR],
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
        on_late: LateCallback | None = None,
    ) -> KTable[Windowed[K], VR]:
        """``merger(key, left, right)`` combines the aggregates of sessions a record joins."""
        return self._aggregate(
            "KSTREAM-AGGREGATE-",
            AggregateFold(initializer, aggregator, merger),
            materialized,
            None,
            name,
            on_late,
        )
