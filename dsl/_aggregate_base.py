"""What every aggregating processor shares: its store, serdes, clocks and forwarding.

Aggregations are batch processors. Each batch is handled in three steps: collect the
records per key (and window) in one pass, judging late records one by one against the
operator's stream time as it advances through the batch; read each aggregate once,
fold its values in, write it once; forward the updates. With a cached store the
forwarding happens when the cache flushes (on commit, or when it is full) and each key
is forwarded once with its newest value; without a cache every update is forwarded.

Forwarded records are table changes: the key (a ``Windowed`` key for windowed
aggregations) and ``Change(new, old)``, with ``old`` filled in only when a downstream
node asked for old values. Their timestamp is, as in Kafka Streams, the largest
timestamp of the records in the aggregate: max(the record's, the previous aggregate's).
"""

from __future__ import annotations

import struct
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from headrace.state import CacheEntry, Windowed
from headrace.state import Change as StoreChange
from headrace.streams import BatchProcessor, ProcessorContext, PunctuationType, Rec

from ._binding import decoder, encoder
from ._change import Change
from ._final import PendingWindows
from ._late import LateCallback, LateRecord, LateRecords

if TYPE_CHECKING:
    from ._graph import TableGraphNode

_STREAM_TIME = b"stream-time"
_TS = 8  # a timestamped store keeps each value behind its 8-byte timestamp
_pack_ts = struct.Struct(">q").pack
_from_bytes = int.from_bytes
_new_tuple = tuple.__new__  # builds a Change without the NamedTuple keyword handling


@dataclass(frozen=True)
class AggregateSpec:
    store_name: str
    key_serde: Any
    value_serde: Any
    fold: Any  # a Fold, or a TableFold for re-grouped tables
    late: LateRecords | None = None
    on_late: LateCallback | None = None


class AggregateBase(BatchProcessor):
    """Binds the store and serdes in ``init``; subclasses implement ``process_batch``."""

    def __init__(self, node: TableGraphNode, spec: AggregateSpec) -> None:
        self._node = node
        self._spec = spec
        self._fold = spec.fold

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._forward = context.forward_batch
        spec = self._spec
        topic = f"{context.application_id}-{spec.store_name}-changelog"
        self._ek, self._dk = encoder(spec.key_serde, topic), decoder(spec.key_serde, topic)
        self._ev, self._dv = encoder(spec.value_serde, topic), decoder(spec.value_serde, topic)
        self._store = context.get_state_store(spec.store_name)
        self._send_old = self._node.send_old_values
        self._pending_ts: dict[Any, int] = {}

    def _forward_changes(self, records: list[Rec]) -> None:
        if records:
            self._forward(records)


class KeyValueAggregate(AggregateBase):
    """An aggregation on the bytes-level key-value stack (metered(caching(logging(...))))
    below the typed store: its cache flushes are decoded and forwarded here.

    The store is timestamped (``headrace.state``'s ``_timestamped`` layout): each
    aggregate is kept behind the timestamp it is forwarded with, the newest of the
    records in it, so the timestamp survives a flush, a restart and a restore. Only a
    delete (an aggregate of ``None``) keeps its timestamp in ``_pending_ts`` until the
    flush forwards it."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._bytes = self._store.inner
        # With no node downstream nobody reads the updates: a flush then decodes and
        # forwards nothing, and no timestamps are kept for it (``_pending_ts``).
        self._readers = bool(context.child_names)
        listener = self._on_flush if self._readers else _ignore_entries
        self._cached = self._bytes.set_flush_listener(listener, self._send_old)

    def _stored(self, raw: bytes | None) -> tuple[Any, int]:
        """A stored aggregate and its timestamp; ``(None, -1)`` when there is none."""
        if raw is None:
            return None, -1
        return self._dv(raw[_TS:]), _from_bytes(raw[:_TS], "big", signed=True)

    def _stamped(self, key_bytes: bytes, agg: Any, timestamp: int) -> bytes | None:
        """An aggregate's stored form; a ``None`` aggregate (a delete) notes its
        timestamp for the flush, having no bytes to keep it in."""
        data: bytes | None = self._ev(agg)
        if data is None:
            if self._readers and self._cached:
                self._pending_ts[key_bytes] = timestamp
            return None
        return _pack_ts(timestamp) + data

    def _on_flush(self, entries: Sequence[CacheEntry]) -> None:
        dk, dv, pop = self._dk, self._dv, self._pending_ts.pop
        send_old = self._send_old
        changes: list[Rec] = []
        for key, new, old, ts in entries:
            if new is not None:
                ts = _from_bytes(new[:_TS], "big", signed=True)
                new_value = dv(new[_TS:])
            else:
                ts = pop(key, ts)
                new_value = None
            old_value = dv(old[_TS:]) if send_old and old is not None else None
            changes.append((dk(key), _new_tuple(Change, (new_value, old_value)), ts, (), -1))
        self._forward_changes(changes)


class WindowedAggregateBase(AggregateBase):
    """Adds stream time, late records, final results and idle close."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._observed = -1
        self._final = self._node.emit_final
        self._pending = PendingWindows()
        idle = self._node.idle_close_ms
        self._last_input_wall = context.current_system_time_ms()
        self._observed_at_last_input = -1
        if self._final and idle is not None:
            context.schedule(
                max(1, idle // 4), PunctuationType.WALL_CLOCK_TIME, self._on_wall_clock
            )
            self._idle_ms = idle
        if self._final:
            self._time_store = context.get_state_store(self._node.final_store.name)
            saved = self._time_store.get(_STREAM_TIME)
            if saved is not None:
                self._observed = self._observed_at_last_input = saved
        self._saved_observed = self._observed

    def _start_final(self) -> None:
        """Final-results mode after a restart: pick up the operator's stream time (records
        for windows it already closed stay late) and wait again for every stored window
        it has not closed yet. Subclasses call this once their stores are bound."""
        if not self._final:
            return
        touch, observed = self._pending.touch, self._observed
        for close, window_id, timestamp in self._stored_windows():
            if close > observed:
                touch(close, window_id, timestamp)

    def _stored_windows(self) -> Iterator[tuple[int, Hashable, int]]:
        """Every window in the store: (close time, id, timestamp for its final record)."""
        raise NotImplementedError

    # -- late records -------------------------------------------------------------------

    def _report_late(self, late: list[tuple[Any, Any, int, int]]) -> None:
        """``late`` holds (key, value, timestamp, stream time) of dropped records."""
        spec = self._spec
        name = self.context.node_name
        if spec.late is not None:
            spec.late.add(name, len(late))
        callback = spec.on_late
        if callback is not None:
            task = self.context.task_id
            for key, value, ts, now in late:
                callback(LateRecord(name, task, key, value, ts, now))

    def _note_input(self) -> None:
        self._last_input_wall = self.context.current_system_time_ms()
        self._observed_at_last_input = self._observed

    # -- final results ------------------------------------------------------------------

    def _emit_due(self) -> None:
        """Forward the windows that closed, then record the stream time they closed at,
        which commits with them: a restart neither repeats nor loses a final result."""
        due = self._pending.due(self._observed)
        if due:
            self._forward_changes(self._final_records(due))
        if self._observed != self._saved_observed:
            self._time_store.put(_STREAM_TIME, self._observed)
            self._saved_observed = self._observed

    def _final_records(self, due: list[tuple[Any, Any]]) -> list[Rec]:
        """Read back and build the final records of windows that closed."""
        raise NotImplementedError

    def _on_wall_clock(self, now: int) -> None:
        idle = now - self._last_input_wall
        if idle < self._idle_ms or self._observed_at_last_input < 0:
            return
        assumed = self._observed_at_last_input + idle
        if assumed > self._observed:
            self._observed = assumed
            self._emit_due()


class TypedWindowedAggregate(WindowedAggregateBase):
    """A windowed aggregation through its typed window or session store (sessions and
    sliding windows): the store's cache hands typed changes to the flush listener."""

    _released_through = -1

    def _listen_for_flushes(self) -> None:
        """Forward each cache flush, unless final-results mode forwards on its own
        schedule; ``_cached`` says whether the store has a cache at all."""
        listener = _ignore_flush if self._final else self._on_flush
        self._cached = self._store.set_flush_listener(listener, self._send_old)

    def _release_closed(self, through: int, step: int) -> None:
        """Tell the store stack that no entry with segment time at or before ``through``
        is written again (its windows or sessions closed): the write cache then drops
        its clean copies of them, which would otherwise stay until its size limit
        pushed them out (hours for a steady key space). Each call is a pass over the
        cache, so it is made once per ``step`` of stream time at most."""
        if through >= self._released_through + step:
            self._released_through = through
            self._store.inner.raw.release_through(through)

    def _on_flush(self, changes: list[StoreChange[Windowed[Any], Any]]) -> None:
        pending, send_old = self._pending_ts, self._send_old
        self._forward_changes(
            [
                (
                    c.key,
                    _new_tuple(Change, (c.new_value, c.old_value if send_old else None)),
                    pending.pop(c.key, c.timestamp),
                    (),
                    -1,
                )
                for c in changes
            ]
        )

    def _finish_batch(
        self, observed: int, late: list[tuple[Any, Any, int, int]], out: list[Rec]
    ) -> None:
        """End a batch in this order: keep the stream time it reached, report its late
        records, forward its updates, then (final-results mode) emit closed windows."""
        self._observed = observed
        if late:
            self._report_late(late)
        self._forward_changes(out)
        if self._final:
            self._note_input()
            self._emit_due()


def _ignore_flush(changes: list[StoreChange[Windowed[Any], Any]]) -> None:
    """Final-results mode forwards from its own schedule, not from cache flushes."""


def _ignore_entries(entries: Sequence[CacheEntry]) -> None:
    """A key-value aggregate with no node downstream forwards nothing."""
