"""count / reduce / aggregate of a grouped stream over tumbling or hopping windows.

The hot path works on binary window keys (record key bytes, 8-byte window start,
4-byte sequence number: the store's own layout) straight against the bytes-level
store stack, below the typed facade: one dictionary entry per key and window per batch,
one read and one write per entry, and no objects beyond the key bytes until the cache
flushes. The store's retention check is done here, per record, together with the
window-closing check.
"""

from __future__ import annotations

import struct
from collections.abc import Hashable, Iterable, Iterator, Sequence
from itertools import filterfalse
from operator import add
from typing import Any

from headrace.state import CacheEntry, Window, Windowed
from headrace.streams import ProcessorContext, Rec

from ._aggregate_base import WindowedAggregateBase, _new_tuple
from ._change import Change
from ._windows import TimeWindows

_NO_SEQ = b"\x00\x00\x00\x00"
_KNOWN_LIMIT = 131_072  # counts remembered between batches, per task
_MAX_TIME = (1 << 63) - 1
_LONG = struct.Struct(">q")  # the long serde's layout: 8 bytes, big-endian, signed


class TimeWindowAggregate(WindowedAggregateBase):
    def __init__(self, node: Any, spec: Any, windows: TimeWindows, retention: int) -> None:
        super().__init__(node, spec)
        self._windows = windows
        self._retention = retention

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._raw = self._store.inner.raw  # metered(caching(logging(segments))) on binary keys
        # Where the window start and the record key sit in a binary key: the schema's
        # own layout, read as the store reads it.
        schema = self._raw.schema
        self._start_bytes = schema.time_slice
        self._key_end = -schema.suffix_len
        self._cached = (not self._final) and self._raw.set_flush_listener(
            self._on_flush, self._send_old
        )
        if self._final:
            self._cached = self._raw.set_flush_listener(_ignore, False)
        if not context.child_names and not self._final:
            self._raw.set_flush_listener(_ignore, False)  # nobody reads the updates
            self._readers = False
        else:
            self._readers = True
        self._suffixes: dict[int, bytes] = {}
        self._window_objects: dict[int, Window] = {}
        self._key_bytes: dict[Any, bytes] = {}
        self._known_counts: dict[bytes, int] = {}
        self._windowed_keys: dict[bytes, Windowed[Any]] = {}
        self._forgotten_below = -(1 << 62)  # closed windows' entries dropped up to here
        # Counting into 8-byte big-endian longs is the common case: done inline below.
        self._fast_count = (
            self._cached
            and not self._final
            and self._windows.tumbling
            and self._fold.counting
            and getattr(self._spec.value_serde, "name", None) == "long"
        )
        self._start_final()

    def _stored_windows(self) -> Iterator[tuple[int, Hashable, int]]:
        size, close = self._windows.size_ms, self._windows.close_time
        for binary, _value in self._raw.scan_raw(None, None, 0, _MAX_TIME):
            start = int.from_bytes(binary[self._start_bytes], "big")
            yield close(start, start + size), binary, start + size - 1

    # -- helpers ------------------------------------------------------------------------

    def _suffix(self, start: int) -> bytes:
        suffix = self._suffixes.get(start)
        if suffix is None:
            if len(self._suffixes) > 4096:
                self._suffixes.clear()
            suffix = self._suffixes[start] = start.to_bytes(8, "big") + _NO_SEQ
        return suffix

    def _window(self, start: int) -> Window:
        window = self._window_objects.get(start)
        if window is None:
            if len(self._window_objects) > 4096:
                self._window_objects.clear()
            window = self._window_objects[start] = Window(start, start + self._windows.size_ms)
        return window

    def _windowed(self, binary: bytes) -> Windowed[Any]:
        # A window is flushed again at every commit that updated it: build its key once.
        cache = self._windowed_keys
        windowed = cache.get(binary)
        if windowed is None:
            if len(cache) >= 65_536:
                cache.clear()
            start = int.from_bytes(binary[self._start_bytes], "big")
            windowed = cache[binary] = Windowed(
                self._dk(binary[: self._key_end]), self._window(start)
            )
        return windowed

    def _forget_closed(self, lowest_open: int) -> None:
        """Drop the remembered counts and built keys of windows at or below
        ``lowest_open``, and the store's cached copies of them: they are closed, no
        record updates them again, and kept they would add an entry per key and window
        until the size limits, which a steady key space reaches only after hours (an
        hour-long soak saw the memory rise). Done once a window size at most, so the
        scan is rare."""
        if lowest_open < self._forgotten_below + self._windows.size_ms:
            return
        self._forgotten_below = lowest_open
        self._raw.release_through(lowest_open)
        if lowest_open < 0:
            return  # window starts are not negative: nothing closed yet
        # Big-endian starts compare as their bytes do: no decoding per entry.
        bound, start = lowest_open.to_bytes(8, "big"), self._start_bytes
        for cache in (self._known_counts, self._windowed_keys):
            closed = [b for b in cache if b[start] <= bound]
            for binary in closed:
                del cache[binary]

    def _on_flush(self, entries: Sequence[CacheEntry]) -> None:
        dv, pending, send_old = self._dv, self._pending_ts, self._send_old
        windowed = self._windowed
        if self._fast_count and not send_old:
            # Longs decoded inline; windowed keys of windows flushed before come from
            # their dict. (Decoded from the flushed bytes, not taken from _known_counts:
            # a flush forced in the middle of a batch's writes must forward what it wrote.)
            built, from_bytes = self._windowed_keys.get, int.from_bytes
            out: list[Rec] = []
            for binary, new, _old, ts in entries:
                count = None if new is None else from_bytes(new, "big", signed=True)
                out.append(
                    (
                        built(binary) or windowed(binary),
                        _new_tuple(Change, (count, None)),
                        pending.pop(binary, ts),
                        (),
                        -1,
                    )
                )
            self._forward_changes(out)
            return
        self._forward_changes(
            [
                (
                    windowed(e.key),
                    _new_tuple(Change, (dv(e.new_value), dv(e.old_value) if send_old else None)),
                    pending.pop(e.key, e.timestamp),
                    (),
                    -1,
                )
                for e in entries
            ]
        )

    def _final_records(self, due: list[tuple[Hashable, Any]]) -> list[Rec]:
        get, dv, windowed = self._raw.get_raw, self._dv, self._windowed
        out: list[Rec] = []
        for binary, ts in due:
            value = dv(get(binary))
            if value is not None:
                out.append((windowed(binary), _new_tuple(Change, (value, None)), ts, (), -1))  # type: ignore[arg-type]
        return out

    # -- processing ---------------------------------------------------------------------

    def process_batch(self, batch: list[Rec]) -> None:
        """Collect per binary window key, judging lateness record by record; then apply."""
        if self._fast_count:
            try:
                self._count_tumbling(batch)
                return
            except TypeError:  # an unhashable key: take the general path
                self._fast_count = False
        windows = self._windows
        size, grace = windows.size_ms, windows.grace_ms
        # Windows at or below this start are gone from the store (see _windows).
        horizon = self.context.current_stream_time_ms() - self._retention
        observed = self._observed
        ek, suffix_of = self._ek, self._suffix
        suffixes = self._suffixes
        keep_values = not self._fold.counting or not self._cached
        groups: dict[bytes, list[Any]] = {}
        late: list[tuple[Any, Any, int, int]] = []
        tumbling = windows.tumbling
        for k, v, ts, _h, _o in batch:
            if k is None:  # a null value is aggregated, as Kafka Streams does
                continue
            if ts > observed:
                observed = ts
            lowest_open = observed - grace - size  # a window starting above this is open
            if lowest_open < horizon:
                lowest_open = horizon
            if tumbling:
                start = ts - ts % size
                if start <= lowest_open:
                    late.append((k, v, ts, observed))
                    continue
                starts: Any = (start,)
            else:
                starts = [s for s in windows.windows_for(ts) if s > lowest_open]
                if not starts:
                    late.append((k, v, ts, observed))
                    continue
            kb = ek(k)
            for start in starts:
                suffix = suffixes.get(start)
                binary = kb + (suffix if suffix is not None else suffix_of(start))
                group = groups.get(binary)
                if group is None:
                    groups[binary] = [k, start, [(v, ts)] if keep_values else 1, ts]
                else:
                    if keep_values:
                        group[2].append((v, ts))
                    else:
                        group[2] += 1
                    if ts > group[3]:
                        group[3] = ts
        self._observed = observed
        self._forget_closed(max(observed - grace - size, horizon))
        if late:
            self._report_late(late)
        if groups:
            self._apply(groups)
        if self._final:
            self._note_input()
            self._emit_due()

    def _count_tumbling(self, batch: list[Rec]) -> None:
        """The general path specialised to a cached count over tumbling windows: the same
        steps with no per-record objects beyond the binary key, and the long values
        decoded and encoded inline."""
        size, grace = self._windows.size_ms, self._windows.grace_ms
        horizon = self.context.current_stream_time_ms() - self._retention
        observed = self._observed
        lowest_open = max(observed - grace - size, horizon)
        suffixes, suffix_of = self._suffixes, self._suffix
        key_bytes, ek = self._key_bytes, self._ek
        counts: dict[bytes, int] = {}
        newest: dict[bytes, int] = {}
        late: list[tuple[Any, Any, int, int]] = []
        readers = self._readers  # timestamps are only needed for forwarded updates
        for k, v, ts, _h, _o in batch:
            if k is None:  # a null value is aggregated, as Kafka Streams does
                continue
            if ts > observed:
                observed = ts
                lowest_open = max(observed - grace - size, horizon)
            start = ts - ts % size
            if start <= lowest_open:
                late.append((k, v, ts, observed))
                continue
            kb = key_bytes.get(k)
            if kb is None:
                if len(key_bytes) >= 65_536:
                    key_bytes.clear()
                kb = key_bytes[k] = ek(k)
            suffix = suffixes.get(start)
            binary = kb + (suffix if suffix is not None else suffix_of(start))
            counts[binary] = counts.get(binary, 0) + 1
            if readers and ts > newest.get(binary, -1):
                newest[binary] = ts
        self._observed = observed
        self._forget_closed(lowest_open)
        if late:
            self._report_late(late)
        # The store holds what this operator last wrote, so the counts it wrote recently
        # are read back from a dict of them instead of through the store stack.
        known = self._known_counts
        if len(known) > _KNOWN_LIMIT:
            known.clear()
        # The rest in one read: past the cache, one multi-get per segment, not a get each.
        unknown = list(filterfalse(known.__contains__, counts))
        absent = bool(unknown) and self._read_stored(unknown)
        totals: Iterable[int]
        if absent and len(unknown) == len(counts):
            # Every key new: a key space beyond what is remembered, where remembering
            # them would only turn the dict over (a key seen again is read back from
            # the write cache, which holds it).
            totals = counts.values()
        else:
            if absent:
                known.update(dict.fromkeys(unknown, 0))
            totals = list(map(add, counts.values(), map(known.__getitem__, counts)))
            known.update(zip(counts, totals, strict=True))  # no Python loop per key
        if readers:
            self._pending_ts.update(newest)
        self._raw.put_all_raw(list(zip(counts, map(_LONG.pack, totals), strict=True)))

    def _read_stored(self, unknown: list[bytes]) -> bool:
        """Read the counts of keys not in ``_known_counts`` from the store, in one read:
        past the cache, one multi-get per segment. True when none is stored (the usual
        answer over a large key space), and then nothing is remembered; otherwise each
        key's stored count (0 if none) goes into ``_known_counts``."""
        raws = self._raw.get_many_raw(unknown)
        if raws.count(None) == len(raws):
            return True
        known, from_bytes = self._known_counts, int.from_bytes
        for binary, raw in zip(unknown, raws, strict=True):
            known[binary] = 0 if raw is None else from_bytes(raw, "big", signed=True)
        return False

    def _apply(self, groups: dict[bytes, list[Any]]) -> None:
        fold, get, put = self._fold, self._raw.get_raw, self._raw.put_raw
        dv, ev = self._dv, self._ev
        if self._final:
            close = self._windows.close_time
            size = self._windows.size_ms
            touch = self._pending.touch_newest
            counting = fold.counting
            for binary, (k, start, values, ts) in groups.items():
                if not counting:
                    values = [v for v, _ in values]
                elif not isinstance(values, int):
                    values = len(values)
                put(binary, ev(fold.final(k, dv(get(binary)), values)))
                touch(close(start, start + size), binary, ts)
            return
        if self._cached:
            pending = self._pending_ts
            if fold.counting:
                for binary, (_k, _start, n, ts) in groups.items():
                    old = get(binary)
                    put(binary, ev(n if old is None else dv(old) + n))
                    pending[binary] = ts
            else:
                for binary, (k, _start, values, ts) in groups.items():
                    put(binary, ev(fold.final(k, dv(get(binary)), [v for v, _ in values])))
                    pending[binary] = ts
            return
        out: list[Rec] = []
        send_old = self._send_old
        window = self._window
        for binary, (k, start, timed, _ts) in groups.items():
            old = dv(get(binary))
            key = Windowed(k, window(start))
            for new, (_v, ts) in zip(fold.steps(k, old, [v for v, _ in timed]), timed, strict=True):
                out.append((key, _new_tuple(Change, (new, old if send_old else None)), ts, (), -1))
                old = new
            put(binary, ev(old))
        self._forward_changes(out)


def _ignore(entries: Sequence[CacheEntry]) -> None:
    """Final-results mode forwards from its own schedule, not from cache flushes."""
