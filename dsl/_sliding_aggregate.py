"""count / reduce / aggregate over sliding windows, as Kafka Streams computes them.

Which windows exist is set out in ``SlidingWindows``: each record's left window
``[t - d, t]``, and its right window ``[t + 1, t + 1 + d]`` once a later record falls in
it. This follows Kafka Streams' ``KStreamSlidingWindowAggregate`` step for step, so its
answers are Kafka Streams' answers, out-of-order records included: windows are built
incrementally, a new window taking its starting aggregate from a neighbouring stored
window, and values fold in arrival order.

Besides the aggregates (the user's window store), a second window store keeps each
window's newest record time, as Kafka Streams keeps it beside the aggregate
(``ValueAndTimestamp``): it tells the processor which windows exist and which records
lie where, and it is the timestamp every update is forwarded with. Both stores are
changelogged; the times store has no write cache, as it is read by ranges.

Late records, with ``close = stream time - grace``: a record at ``t`` is dropped only when
even its right window's span ends too early (``t + d < close``). Otherwise it is added
to every stored window that contains it and ends at or after ``close`` (newest start
first), then the windows it creates are written in Kafka Streams' order: the previous
record's right window and its own left window (each only while open), and its own right
window. A record at ``t < d`` takes Kafka Streams' early-record path, where ``[0, d]``
stands for every left window that would start before 0.

Under ``suppress(until_window_closes())`` a window goes out as Kafka Streams' suppression
buffer lets it out (``KTableSuppressProcessorSupplier``: a window whose ``end <= stream
time - grace``), checked after every record: once stream time reaches ``end + grace``,
one millisecond before the aggregate closes the window (its end is inclusive), and again
for each update the window still takes at that stream time. ``emit_final()`` emits a
window once, when the aggregate has closed it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

from headrace.state import Window, Windowed
from headrace.streams import ProcessorContext, Rec

from ._aggregate_base import TypedWindowedAggregate, _new_tuple
from ._change import Change
from ._windows import SlidingWindows

# A stored window as the processor reads it: (start, aggregate, newest record time).
_Stored = tuple[int, Any, int]


class SlidingWindowAggregate(TypedWindowedAggregate):
    def __init__(
        self,
        node: Any,
        spec: Any,
        windows: SlidingWindows,
        retention: int,
        times_name: str,
        lookback: int,
    ) -> None:
        super().__init__(node, spec)
        self._windows = windows
        self._d = windows.time_difference_ms
        self._retention = retention
        self._times_name = times_name
        # Kafka Streams' window store shows windows starting after its newest window
        # start minus its retention (2 d + grace unless the store names one).
        self._lookback = min(lookback, retention)
        self._newest_start = -1

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        # suppress() emits a window at end + grace, emit_final() at end + grace + 1
        self._early = 1 if self._final and self._node.suppressed_via is not None else 0
        self._times = context.get_state_store(self._times_name)
        self._listen_for_flushes()
        self._start_final()

    def _stored_windows(self) -> Iterator[tuple[int, Hashable, int]]:
        close, times, early = self._windows.close_time, self._times, self._early
        for windowed, _value in self._store.all():
            w = windowed.window
            newest = times.get(windowed.key, w.start)
            yield close(w.start, w.end) - early, windowed, w.end if newest is None else newest

    def _final_records(self, due: list[tuple[Hashable, Any]]) -> list[Rec]:
        out: list[Rec] = []
        for windowed, ts in due:
            assert isinstance(windowed, Windowed)
            value = self._store.get(windowed.key, windowed.window.start)
            if value is not None:
                out.append((windowed, _new_tuple(Change, (value, None)), ts, (), -1))
        return out

    def process_batch(self, batch: list[Rec]) -> None:
        d, grace = self._d, self._windows.grace_ms
        horizon = self.context.current_stream_time_ms() - self._retention
        observed = self._observed
        late: list[tuple[Any, Any, int, int]] = []
        out: list[Rec] = []
        pending = self._pending if self._early else None
        for k, v, ts, _h, _o in batch:
            if k is None or v is None:
                continue
            if ts > observed:
                observed = ts
            close = observed - grace
            if ts + d < close or ts - d - 1 <= horizon:
                late.append((k, v, ts, observed))
            elif ts < d:
                self._process_early(k, v, ts, close, out)
            else:
                self._process(k, v, ts, close, out)
            if pending is not None and pending.any_due(observed):
                # Kafka Streams' suppression buffer emits after each record: a window it
                # let out may still take an update, emitted in turn
                self._observed = observed
                self._emit_due()
        # A record accepted from here on is at or after observed - grace - d, and changes
        # only windows ending at or after observed - grace: the ones starting before
        # observed - grace - d are done.
        self._release_closed(observed - grace - d - 1, d + 1)
        self._finish_batch(observed, late, out)

    def _stored(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, int]]:
        """(start, newest record time) of the stored windows of ``key`` starting in
        ``[time_from, time_to]``, oldest first. They are read from the times store, which
        has no cache: a range read through a write cache sorts the cache, where a point
        read of an aggregate (``_agg``) is a dictionary lookup."""
        visible = self._newest_start - self._lookback + 1
        return list(self._times.fetch(key, max(time_from, visible), time_to))

    def _agg(self, key: Any, start: int) -> Any:
        return self._store.get(key, start)

    def _process(self, key: Any, value: Any, ts: int, close: int, out: list[Rec]) -> None:
        """Kafka Streams' ``processReverse``: walk the stored windows from the newest
        start back, adding the record to those that contain it, until the window just
        before its left window; then create the windows it needs."""
        d = self._d
        starts: set[int] = set()
        left_start: int | None = None  # the stored window just before the left one
        right_base: _Stored | None = None
        left_exists = right_exists = False
        previous: int | None = None  # the newest record time before ts, when known
        agg_of = self._agg
        for start, newest in reversed(self._stored(key, max(0, ts - 2 * d), ts + 1)):
            starts.add(start)
            end = start + d
            if start == ts + 1:
                right_exists = True
            elif end > ts:
                agg = agg_of(key, start)
                if right_base is None:
                    right_base = (start, agg, newest)
                self._add(key, value, ts, start, agg, newest, close, out)
            elif end == ts:
                left_exists = True
                self._add(key, value, ts, start, agg_of(key, start), newest, close, out)
                if newest >= ts:
                    return  # a record at ts came before: its windows exist already
                previous = newest
            else:
                left_start = start
                previous = newest
                break
        if previous is not None and previous + 1 not in starts and previous + 1 + d >= ts:
            self._add(key, value, ts, previous + 1, None, ts, close, out)
        if not left_exists:
            base = None
            if left_start is not None and previous is not None and ts - d <= previous:
                base = agg_of(key, left_start)
            self._add(key, value, ts, ts - d, base, ts, close, out)
        if not right_exists and right_base is not None and right_base[2] > ts:
            self._write(key, ts + 1, right_base[1], right_base[2], None, out)

    def _process_early(self, key: Any, value: Any, ts: int, close: int, out: list[Rec]) -> None:
        """Kafka Streams' ``processEarly`` for ``0 <= ts < d``: ``[0, d]`` holds every
        record before ``d``; the windows after it are walked oldest first."""
        starts: set[int] = set()
        combined: _Stored | None = None
        right_base: _Stored | None = None
        right_exists = False
        previous: int | None = None
        agg_of = self._agg
        for start, newest in self._stored(key, 0, ts + 1):
            starts.add(start)
            if start == 0:
                combined = (start, agg_of(key, 0), newest)
                if newest < ts:
                    previous = newest
            elif start <= ts:
                agg = agg_of(key, start)
                right_base = (start, agg, newest)
                self._add(key, value, ts, start, agg, newest, close, out)
            elif start == ts + 1:
                right_exists = True
        if right_base is None and combined is not None and combined[2] > ts:
            right_base = combined
        if not right_exists and right_base is not None and right_base[2] > ts:
            self._write(key, ts + 1, right_base[1], right_base[2], None, out)
        if previous is not None and previous + 1 not in starts:
            self._add(key, value, ts, previous + 1, None, ts, close, out)
        if combined is None:
            self._add(key, value, ts, 0, None, ts, close, out)
        else:
            self._add(key, value, ts, 0, combined[1], combined[2], close, out)

    def _add(
        self,
        key: Any,
        value: Any,
        ts: int,
        start: int,
        agg: Any,
        newest: int,
        close: int,
        out: list[Rec],
    ) -> None:
        """Fold the record into the window at ``start`` (its aggregate so far ``agg``,
        None for a new one), unless the window has closed."""
        if start + self._d < close:
            return
        fold = self._fold
        new = fold.final(key, agg, 1 if fold.counting else [value])
        self._write(key, start, new, ts if agg is None or newest < ts else newest, agg, out)

    def _write(self, key: Any, start: int, new: Any, newest: int, old: Any, out: list[Rec]) -> None:
        end = start + self._d
        windowed = Windowed(key, Window(start, end))
        if start > self._newest_start:
            self._newest_start = start
        self._store.put(key, new, start)
        self._times.put(key, newest, start)
        if self._final:
            close = self._windows.close_time(start, end) - self._early
            self._pending.touch(close, windowed, newest)
        elif self._cached:
            self._pending_ts[windowed] = newest
        else:
            out.append(
                (
                    windowed,
                    _new_tuple(Change, (new, old if self._send_old else None)),
                    newest,
                    (),
                    -1,
                )
            )
