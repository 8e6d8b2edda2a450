"""count / reduce / aggregate over session windows.

A record at ``t`` joins every session of its key that ends at or after ``t - gap`` and
starts at or before ``t + gap``; they merge (their aggregates combined with the
merger, then the record folded in) into one session spanning them all. Merged-away
sessions are deleted and forwarded as tombstones, as in Kafka Streams.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

from headrace.state import Window, Windowed
from headrace.streams import ProcessorContext, Rec

from ._aggregate_base import TypedWindowedAggregate, _new_tuple
from ._change import Change
from ._windows import SessionWindows


class SessionWindowAggregate(TypedWindowedAggregate):
    def __init__(self, node: Any, spec: Any, windows: SessionWindows, retention: int) -> None:
        super().__init__(node, spec)
        self._windows = windows
        self._retention = retention

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._listen_for_flushes()
        self._start_final()

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
        grace = self._windows.grace_ms
        horizon = self.context.current_stream_time_ms() - self._retention
        observed = self._observed
        late: list[tuple[Any, Any, int, int]] = []
        out: list[Rec] = []
        for k, v, ts, _h, _o in batch:
            if k is None or v is None:
                continue
            if ts > observed:
                observed = ts
            if ts + grace < observed or ts <= horizon:
                late.append((k, v, ts, observed))
                continue
            self._merge(k, v, ts, out)
        # A record accepted from here on is at or after observed - grace, and joins only
        # sessions ending at or after its time - gap: the ones ending before are done.
        gap = self._windows.gap_ms
        self._release_closed(observed - grace - gap - 1, gap)
        self._finish_batch(observed, late, out)

    def _merge(self, key: Any, value: Any, ts: int, out: list[Rec]) -> None:
        """Steps: find the overlapping sessions; fold them and the record into one; delete
        the merged-away sessions; write the merged one; forward or note the changes."""
        gap, fold, store = self._windows.gap_ms, self._fold, self._store
        start = end = ts
        agg: Any = None
        same_window_old: Any = None
        merged = list(store.find_sessions(key, ts - gap, ts + gap))
        for session, session_agg in merged:
            w = session.window
            start, end = min(start, w.start), max(end, w.end)
            agg = session_agg if agg is None else fold.merge(key, agg, session_agg)
        new = fold.final(key, agg, 1 if fold.counting else [value])
        window = Window(start, end)
        target = Windowed(key, window)
        close = self._windows.close_time
        forward = not self._final and not self._cached
        newest = ts
        for session, session_agg in merged:
            if session.window == window:
                same_window_old = session_agg
                continue
            store.remove(session)
            if self._final:
                self._pending.discard(close(session.window.start, session.window.end), session)
            elif forward:
                out.append((session, _new_tuple(Change, (None, session_agg)), ts, (), -1))
        store.put(target, new)
        if self._final:
            self._pending.touch(close(start, end), target, newest)
        elif self._cached:
            self._pending_ts[target] = newest
        else:
            old = same_window_old if self._send_old else None
            out.append((target, _new_tuple(Change, (new, old)), newest, (), -1))
