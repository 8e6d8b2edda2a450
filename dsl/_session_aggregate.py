"""count / reduce / aggregate over session windows.

A record at ``t`` joins every session of its key that ends at or after ``t - gap`` and
starts at or before ``t + gap``; they merge into one session spanning them all. As in
Kafka Streams' ``KStreamSessionWindowAggregate``, the merged aggregate starts from the
initializer, takes in each session's aggregate with the merger (in order of their ends),
and then the aggregator adds the record. Only a record with a null key is skipped: a
null value is aggregated (count counts it, an aggregator or reducer receives ``None``).
Merged-away sessions are deleted and forwarded as tombstones, unless the merged session
is the record's own point ``[t, t]``: then the one session there is updated in place.

Late records follow Kafka Streams' ``KStreamSessionWindowAggregate``: a record is dropped
only when the session it would end up in, after merging, ends before
``stream time - gap - grace``. An out-of-order record that lands in (or bridges to) a
session still open is counted, however old its own timestamp.

Every forwarded session carries its end as its timestamp (the newest record in it), and
so does the tombstone of a merged-away session, as Kafka Streams stamps them. When the
record joins any session, all of them are deleted and tombstoned before the merged one
is written, even one whose window the merged one keeps (uncached, both are forwarded;
a cache coalesces them, as Kafka Streams' does).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import Any

from headrace.state import Change as StoreChange
from headrace.state import Window, Windowed
from headrace.streams import ProcessorContext, Rec

from ._aggregate_base import TypedWindowedAggregate, _new_tuple
from ._change import Change
from ._folds import AggregateFold, CountFold, Fold, ReduceFold
from ._windows import SessionWindows

Initializer = Callable[[], Any]
Merger = Callable[[Any, Any, Any], Any]
Aggregator = Callable[[Any, Any, Any], Any]


def session_steps(fold: Fold) -> tuple[Initializer, Merger, Aggregator]:
    """A fold as Kafka Streams' session aggregation runs it: initializer, merger
    ``(key, aggregate, session's aggregate)`` and aggregator ``(key, value, aggregate)``.
    Count and reduce are the ones ``SessionWindowedKStreamImpl`` builds: count from 0,
    mergers adding; reduce from ``None``, its aggregator and merger starting over from
    the other side when the aggregate is ``None``.

    >>> init, merge, add = session_steps(ReduceFold(lambda a, b: a + b))
    >>> add("k", 3, merge("k", merge("k", init(), 1), 2))
    6
    >>> add("k", 3, init())
    3
    """
    if isinstance(fold, CountFold):
        return _zero, _count_merge, _count_add
    if isinstance(fold, ReduceFold):
        reducer = fold.reducer

        def reduce_merge(key: Any, agg: Any, other: Any) -> Any:
            return other if agg is None else reducer(agg, other)

        def reduce_add(key: Any, value: Any, agg: Any) -> Any:
            return value if agg is None else reducer(agg, value)

        return _none, reduce_merge, reduce_add
    assert isinstance(fold, AggregateFold), fold
    merger = fold.merger
    assert merger is not None, "session aggregations need a merger"
    return fold.initializer, merger, fold.aggregator


def _zero() -> int:
    return 0


def _none() -> None:
    return None


def _count_merge(key: Any, agg: int, other: int) -> int:
    return agg + other


def _count_add(key: Any, value: Any, agg: int) -> int:
    return agg + 1


class SessionWindowAggregate(TypedWindowedAggregate):
    def __init__(
        self, node: Any, spec: Any, windows: SessionWindows, retention: int, lookback: int
    ) -> None:
        super().__init__(node, spec)
        self._windows = windows
        self._retention = retention
        self._lookback = min(lookback, retention)
        self._steps = session_steps(spec.fold)

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._listen_for_flushes()
        self._start_final()

    def _on_flush(self, changes: list[StoreChange[Windowed[Any], Any]]) -> None:
        """A cache flush: each session (or its tombstone) is stamped with its end."""
        send_old = self._send_old
        self._forward_changes(
            [
                (
                    c.key,
                    _new_tuple(Change, (c.new_value, c.old_value if send_old else None)),
                    c.key.window.end,
                    (),
                    -1,
                )
                for c in changes
            ]
        )

    def _stored_windows(self) -> Iterator[tuple[int, Hashable, int]]:
        close = self._windows.close_time
        for session, _value in self._store.fetch_range(None, None):
            w = session.window
            yield close(w.start, w.end), session, w.end

    def _final_records(self, due: list[tuple[Hashable, Any]]) -> list[Rec]:
        out: list[Rec] = []
        for session, ts in due:
            assert isinstance(session, Windowed)
            w = session.window
            value = self._store.fetch_session(session.key, w.start, w.end)
            if value is not None:
                out.append((session, _new_tuple(Change, (value, None)), ts, (), -1))
        return out

    def process_batch(self, batch: list[Rec]) -> None:
        windows = self._windows
        grace, gap, lookback = windows.grace_ms, windows.gap_ms, self._lookback
        observed = self._observed
        late: list[tuple[Any, Any, int, int]] = []
        out: list[Rec] = []
        merge = self._merge
        for k, v, ts, _h, _o in batch:
            if k is None:
                continue
            # The store shows sessions ending after its newest session end (the stream
            # time before this record) minus the lookback; the record is judged against
            # the stream time it brings.
            visible = observed - lookback + 1
            if ts > observed:
                observed = ts
            if not merge(k, v, ts, visible, observed - grace - gap, out):
                late.append((k, v, ts, observed))
        # Sessions that ended before observed - grace - gap take no new record of their
        # own; one may still be merged away by a record bridging it to an open session,
        # which reads it from the store below the cache.
        self._release_closed(observed - grace - gap - 1, gap)
        self._finish_batch(observed, late, out)

    def _merge(
        self, key: Any, value: Any, ts: int, visible: int, close: int, out: list[Rec]
    ) -> bool:
        """Steps:

        1. find the overlapping sessions still ``visible`` (ending at or after it: Kafka
           Streams' store hides those past its retention) and the window they merge into;
        2. drop the record (return False) if that window ends before ``close``;
        3. merge them into the initializer's aggregate and add the record; unless the
           merged window is the record's own point, delete every merged session; write
           the merged one, and forward or note the changes.
        """
        gap, store = self._windows.gap_ms, self._store
        start = end = ts
        merged = list(store.find_sessions(key, max(ts - gap, visible), ts + gap))
        for session, _agg in merged:
            w = session.window
            if w.start < start:
                start = w.start
            if w.end > end:
                end = w.end
        if end < close:
            return False
        initializer, merger, aggregator = self._steps
        agg = initializer()
        for _session, session_agg in merged:
            agg = merger(key, agg, session_agg)
        new = aggregator(key, value, agg)
        target = Windowed(key, Window(start, end))
        close_time = self._windows.close_time
        final, cached, send_old = self._final, self._cached, self._send_old
        if start != ts or end != ts:
            for session, session_agg in merged:
                if (
                    (final or cached)
                    and session.window.start == start
                    and session.window.end == end
                ):
                    continue  # the write below replaces it; nothing forwards the tombstone
                store.remove(session)
                removed_end = session.window.end
                if final:
                    self._pending.discard(close_time(session.window.start, removed_end), session)
                elif not cached:
                    old = session_agg if send_old else None
                    out.append((session, _new_tuple(Change, (None, old)), removed_end, (), -1))
        store.put(target, new)
        if final:
            self._pending.touch(close_time(start, end), target, end)
        elif not cached:
            out.append((target, _new_tuple(Change, (new, None)), end, (), -1))
        return True
