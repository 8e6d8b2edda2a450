"""count / reduce / aggregate over sliding windows.

Which windows exist is set out in ``SlidingWindows``. A record at ``t`` changes exactly
the windows that contain it, and may create the window starting just after it; each
of those is recomputed from the records it covers. The records come from a buffer
store (a window store that keeps duplicates, keyed by record key and timestamp, with
the grouped stream's value serde), so any aggregator works, with no inverse, and the
buffer survives a restart through its changelog like every other store. The cost is
one fold per affected window over the records in it: fine for windows of tens or
hundreds of records per key, not for thousands.

Within a window, values fold in timestamp order, ties in arrival order.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

from headrace.state import Window, Windowed
from headrace.streams import ProcessorContext, Rec

from ._aggregate_base import TypedWindowedAggregate, _new_tuple
from ._change import Change
from ._windows import SlidingWindows


class SlidingWindowAggregate(TypedWindowedAggregate):
    def __init__(
        self, node: Any, spec: Any, windows: SlidingWindows, retention: int, buffer_name: str
    ) -> None:
        super().__init__(node, spec)
        self._windows = windows
        self._retention = retention
        self._buffer_name = buffer_name

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._buffer = context.get_state_store(self._buffer_name)
        self._listen_for_flushes()
        self._start_final()

    def _stored_windows(self) -> Iterator[tuple[int, Hashable, int]]:
        close = self._windows.close_time
        for windowed, _value in self._store.all():
            w = windowed.window
            yield close(w.start, w.end), windowed, w.end

    def _final_records(self, due: list[tuple[Hashable, Any]]) -> list[Rec]:
        out: list[Rec] = []
        for windowed, ts in due:
            assert isinstance(windowed, Windowed)
            value = self._store.get(windowed.key, windowed.window.start)
            if value is not None:
                out.append((windowed, _new_tuple(Change, (value, None)), ts, (), -1))
        return out

    def _starts(self, ts: int, times: list[int]) -> list[int]:
        """Starts of the windows a record at ``ts`` changes or creates, given the record
        times of its key within ``[ts - d - 1, ts + d + 1]`` (``ts`` included)."""
        d = self._windows.time_difference_ms
        starts = {max(0, ts - d)}
        right = False
        for p in times:
            if ts - d - 1 <= p < ts:
                starts.add(p + 1)  # p's right window now holds ts
            elif ts <= p <= ts + d:
                starts.add(max(0, p - d))  # p's left window holds ts
            if ts < p <= ts + d + 1:
                right = True
        if right:
            starts.add(ts + 1)
        return sorted(starts)

    def process_batch(self, batch: list[Rec]) -> None:
        d, grace = self._windows.time_difference_ms, self._windows.grace_ms
        horizon = self.context.current_stream_time_ms() - self._retention
        observed = self._observed
        late: list[tuple[Any, Any, int, int]] = []
        out: list[Rec] = []
        for k, v, ts, _h, _o in batch:
            if k is None or v is None:
                continue
            if ts > observed:
                observed = ts
            if ts + grace < observed or ts - d - 1 <= horizon:
                late.append((k, v, ts, observed))
                continue
            self._buffer.put(k, v, ts)
            records = list(self._buffer.fetch(k, max(0, ts - d - 1), ts + d + 1))
            for start in self._starts(ts, sorted({t for t, _ in records})):
                inside = [(t, value) for t, value in records if start <= t <= start + d]
                self._update(k, start, inside, out)
        # A record accepted from here on is at or after observed - grace, and changes only
        # windows starting at or after its time - d: the ones starting before are done.
        self._release_closed(observed - grace - d - 1, d + 1)
        self._finish_batch(observed, late, out)

    def _update(self, key: Any, start: int, inside: list[tuple[int, Any]], out: list[Rec]) -> None:
        fold = self._fold
        values = [value for _, value in inside]
        new = fold.final(key, None, len(values) if fold.counting else values)
        newest = max(t for t, _ in inside)
        end = start + self._windows.time_difference_ms
        windowed = Windowed(key, Window(start, end))
        if self._final:
            self._store.put(key, new, start)
            self._pending.touch(self._windows.close_time(start, end), windowed, newest)
            return
        if self._cached:
            self._store.put(key, new, start)
            self._pending_ts[windowed] = newest
            return
        old = self._store.get(key, start) if self._send_old else None
        self._store.put(key, new, start)
        out.append((windowed, _new_tuple(Change, (new, old)), newest, (), -1))
