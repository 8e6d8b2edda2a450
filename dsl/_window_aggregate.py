"""count / reduce / aggregate of a grouped stream over tumbling or hopping windows.

The hot path works on binary window keys (record key bytes, 8-byte window start,
4-byte sequence number: the store's own layout) straight against the bytes-level
store stack, below the typed facade: one dictionary entry per key and window per batch,
one read and one write per entry, and no objects beyond the key bytes until the cache
flushes. The store's retention check is done here, per record, together with the
window-closing check.

The store is timestamped: each window's aggregate is kept behind the largest timestamp
of the records in it, which every update and the final result are stamped with, as
``KStreamWindowAggregate`` does (max of the record's and the stored aggregate's).
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Sequence
from itertools import filterfalse
from operator import add
from typing import Any, cast

from headrace.state import CacheEntry, Window, Windowed
from headrace.streams import ProcessorContext, Rec

from ._aggregate_base import WindowedAggregateBase, _new_tuple
from ._change import Change
from ._windows import TimeWindows

_NO_SEQ = b"\x00\x00\x00\x00"
_KNOWN_LIMIT = 131_072  # counts remembered between batches, per task
_MAX_TIME = (1 << 63) - 1
_TS = 8  # each stored value sits behind its 8-byte timestamp
_STAMP = struct.Struct(">q")  # a timestamp's layout
_STAMPED_LONG = struct.Struct(">qq")  # a timestamp, then a count as the long serde writes it
_NO_TIME = -(1 << 63)
_from_bytes = int.from_bytes


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
        self._known_stamps: dict[bytes, int] = {}  # the timestamps of _known_counts
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
        for binary, value in self._raw.scan_raw(None, None, 0, _MAX_TIME):
            start = int.from_bytes(binary[self._start_bytes], "big")
            yield close(start, start + size), binary, _from_bytes(value[:_TS], "big", signed=True)

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
        for cache in (self._known_counts, self._known_stamps, self._windowed_keys):
            closed = [b for b in cache if b[start] <= bound]
            for binary in closed:
                del cache[binary]

    def _on_flush(self, entries: Sequence[CacheEntry]) -> None:
        """Forward flushed windows, each stamped with the timestamp stored with it (a
        window's aggregate is never deleted here, so every flushed value has one)."""
        dv, send_old, windowed = self._dv, self._send_old, self._windowed
        out: list[Rec] = []
        if self._fast_count and not send_old:
            # Longs decoded inline; windowed keys of windows flushed before come from
            # their dict. (Decoded from the flushed bytes, not taken from _known_counts:
            # a flush forced in the middle of a batch's writes must forward what it wrote.)
            built, unpack = self._windowed_keys.get, _STAMPED_LONG.unpack
            for binary, new, _old, _ts in entries:
                ts, count = unpack(new)  # type: ignore[arg-type]  # a count is never deleted
                out.append(
                    (
                        built(binary) or windowed(binary),
                        _new_tuple(Change, (count, None)),
                        ts,
                        (),
                        -1,
                    )
                )
            self._forward_changes(out)
            return
        for binary, new, old, ts in entries:
            old_value = dv(old[_TS:]) if send_old and old is not None else None
            if new is None:  # an aggregator's None: a delete, stamped with stream time
                out.append((windowed(binary), _new_tuple(Change, (None, old_value)), ts, (), -1))
                continue
            out.append(
                (
                    windowed(binary),
                    _new_tuple(Change, (dv(new[_TS:]), old_value)),
                    _from_bytes(new[:_TS], "big", signed=True),
                    (),
                    -1,
                )
            )
        self._forward_changes(out)

    def _final_records(self, due: list[tuple[Hashable, Any]]) -> list[Rec]:
        get, dv, windowed = self._raw.get_raw, self._dv, self._windowed
        out: list[Rec] = []
        for window_id, _ts in due:  # the timestamp stored with the window is the newest
            binary = cast("bytes", window_id)
            raw = get(binary)
            if raw is not None:
                ts = _from_bytes(raw[:_TS], "big", signed=True)
                out.append(
                    (windowed(binary), _new_tuple(Change, (dv(raw[_TS:]), None)), ts, (), -1)
                )
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
        # The binary key and the timestamp of each record on time, in two lists (no
        # object per record): counted, and each window's newest timestamp found, by
        # C-level calls after the loop.
        binaries: list[bytes] = []
        times_of: list[int] = []
        add_binary, add_time = binaries.append, times_of.append
        late: list[tuple[Any, Any, int, int]] = []
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
            add_binary(kb + (suffix if suffix is not None else suffix_of(start)))
            add_time(ts)
        # First-seen order, as the cache flushes; a dict built from the records in time
        # order keeps each window's last, so newest, timestamp.
        counts: dict[bytes, int] = Counter(binaries)
        order = sorted(range(len(times_of)), key=times_of.__getitem__)
        newest = dict(
            zip(map(binaries.__getitem__, order), map(times_of.__getitem__, order), strict=True)
        )
        self._observed = observed
        self._forget_closed(lowest_open)
        if late:
            self._report_late(late)
        # The store holds what this operator last wrote, so the counts it wrote recently
        # are read back from a dict of them instead of through the store stack.
        known, stamps = self._known_counts, self._known_stamps
        if len(known) > _KNOWN_LIMIT:
            known.clear()
            stamps.clear()
        # The rest in one read: past the cache, one multi-get per segment, not a get each.
        unknown = list(filterfalse(known.__contains__, counts))
        absent = bool(unknown) and self._read_stored(unknown)
        totals: Iterable[int]
        times: Iterable[int]
        if absent and len(unknown) == len(counts):
            # Every key new: a key space beyond what is remembered, where remembering
            # them would only turn the dict over (a key seen again is read back from
            # the write cache, which holds it).
            totals, times = counts.values(), map(newest.__getitem__, counts)
        else:
            if absent:
                known.update(dict.fromkeys(unknown, 0))
                stamps.update(dict.fromkeys(unknown, _NO_TIME))
            # No Python loop per key.
            totals = list(map(add, counts.values(), map(known.__getitem__, counts)))
            times = list(map(max, map(newest.__getitem__, counts), map(stamps.__getitem__, counts)))
            known.update(zip(counts, totals, strict=True))
            stamps.update(zip(counts, times, strict=True))
        self._raw.put_all_raw(
            list(zip(counts, map(_STAMPED_LONG.pack, times, totals), strict=True))
        )

    def _read_stored(self, unknown: list[bytes]) -> bool:
        """Read the counts of keys not in ``_known_counts`` from the store, in one read:
        past the cache, one multi-get per segment. True when none is stored (the usual
        answer over a large key space), and then nothing is remembered; otherwise each
        key's stored count (0 if none) goes into ``_known_counts``."""
        raws = self._raw.get_many_raw(unknown)
        if raws.count(None) == len(raws):
            return True
        known, stamps, unpack = self._known_counts, self._known_stamps, _STAMPED_LONG.unpack
        for binary, raw in zip(unknown, raws, strict=True):
            if raw is None:
                known[binary], stamps[binary] = 0, _NO_TIME
            else:
                stamps[binary], known[binary] = unpack(raw)
        return False

    def _apply(self, groups: dict[bytes, list[Any]]) -> None:
        """Fold each window's values into its stored aggregate and store the result
        behind max(the window's newest record, the stored timestamp)."""
        fold, get, put = self._fold, self._raw.get_raw, self._raw.put_raw
        dv, ev, pack = self._dv, self._ev, _STAMP.pack
        counting = fold.counting
        if self._final or self._cached:
            touch = self._pending.touch_newest if self._final else None
            close, size = self._windows.close_time, self._windows.size_ms
            for binary, (k, start, values, ts) in groups.items():
                if not counting:
                    values = [v for v, _ in values]
                elif not isinstance(values, int):
                    values = len(values)
                raw = get(binary)
                if raw is None:
                    agg = None
                else:
                    agg = dv(raw[_TS:])
                    stored_ts = _from_bytes(raw[:_TS], "big", signed=True)
                    if stored_ts > ts:
                        ts = stored_ts
                put(binary, _stamped(pack(ts), ev(fold.final(k, agg, values))))
                if touch is not None:
                    touch(close(start, start + size), binary, ts)
            return
        out: list[Rec] = []
        send_old = self._send_old
        window = self._window
        for binary, (k, start, timed, _ts) in groups.items():
            raw = get(binary)
            if raw is None:
                old, stamp = None, _NO_TIME
            else:
                old, stamp = dv(raw[_TS:]), _from_bytes(raw[:_TS], "big", signed=True)
            key = Windowed(k, window(start))
            for new, (_v, ts) in zip(fold.steps(k, old, [v for v, _ in timed]), timed, strict=True):
                if ts > stamp:
                    stamp = ts
                out.append(
                    (key, _new_tuple(Change, (new, old if send_old else None)), stamp, (), -1)
                )
                old = new
            put(binary, _stamped(pack(stamp), ev(old)))
        self._forward_changes(out)


def _stamped(stamp: bytes, data: bytes | None) -> bytes | None:
    """A value's stored form behind its packed timestamp; ``None`` (a delete) stays."""
    return None if data is None else stamp + data


def _ignore(entries: Sequence[CacheEntry]) -> None:
    """Final-results mode forwards from its own schedule, not from cache flushes."""
