"""Stream-stream windowed joins: inner, left and outer.

Each side keeps its records in a window store that retains duplicates, under binary
keys ``key | timestamp | sequence number``. The two sides of one join in one task share
a :class:`JoinState`: the join's stream time (the largest timestamp either side has
seen) and the records waiting for a partner on an outer side.

Joining one record, step by step (Kafka Streams' ``KStreamKStreamJoin``):

1. Advance the stream time with its timestamp (a record that is then skipped, for a
   ``None`` value, still moves it, as in Kafka Streams).
2. If the record is at the stream time, emit the waiting records whose windows have
   closed, unmatched (``joiner(left, None)`` or ``joiner(None, right)``), before this
   record's own results. As in Kafka Streams' ``emitNonJoinedOuterRecords``, this is
   gated by the join's ``min time``: nothing is emitted while ``min time + after +
   grace`` (the record's side's ``after``) has not passed the stream time. ``min time``
   is the oldest timestamp put in the waiting store since the last emission, and an
   emission sets it to the timestamp of the record it stopped at: the waiting records
   go out in ``(timestamp, side (right first), key bytes)`` order, those of a side
   whose window is still open are skipped, and the emission stops after the next
   record once a still-open record of each side has been seen (or at the end). A walk
   over an empty store leaves the min time unset (Java's Long.MAX_VALUE, which the
   gate's sum wraps past: the next record at the stream time walks again).
3. Pair it with each record of the other side's store that lies in its window and that
   the store still holds: Kafka Streams' window store keeps a side's records for
   ``before + after + grace`` behind the newest timestamp that side has stored, however
   late the record being joined is. A waiting record that pairs stops waiting. A pair
   is emitted when its second record arrives, with the larger of the two timestamps.
4. Store it in its own side's store, late or not (a partner arriving later may still
   reach it). On an outer side with no partner yet, it waits (in the shared outer
   store, and in memory) while a partner may still come; if its window's span already
   ends before the stream time (``timestamp + after < stream time``, grace not
   counted, as in Kafka Streams), it is emitted unmatched at once instead.

A left or outer join thus never emits an unmatched record that a partner could still
reach within the window (Kafka Streams' KIP-633 behaviour); a record emitted unmatched
late may still pair afterwards, as in Kafka Streams.

"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sortedcontainers import SortedList

from headrace.streams import BatchProcessor, ProcessorContext, Rec, Topology

from ._binding import decoder, encoder
from ._graph import GraphNode
from ._join_windows import JoinWindows
from ._operators import Transform, pass_through

PairFn = Callable[[Any, Any, Any], Any]  # (key, left value, right value) -> joined value
_LEFT, _RIGHT = b"L", b"R"
_SEQ_MASK = 0xFFFFFFFF
_NO_MIN_TIME = 2**63 - 1  # Kafka Streams' Long.MAX_VALUE: nothing put since the last emission


def _gate_passes(min_time: int, gate: int, stream_time: int) -> bool:
    """Kafka Streams' ``minTime + joinAfterMs + joinGraceMs < streamTime`` in Java longs:
    an unset min time (Long.MAX_VALUE) plus a positive ``gate`` wraps around and passes.

    >>> _gate_passes(1000, 550, 1551), _gate_passes(1000, 550, 1550)
    (True, False)
    >>> _gate_passes(_NO_MIN_TIME, 550, 0), _gate_passes(_NO_MIN_TIME, 0, 10**12)
    (True, False)
    """
    limit = min_time + gate
    if limit > _NO_MIN_TIME:
        limit -= 2**64
    return limit < stream_time


def join_fn(joiner: Callable[..., Any], with_key: bool) -> PairFn:
    if with_key:
        return joiner
    return lambda key, left, right: joiner(left, right)


@dataclass(frozen=True)
class StreamJoinSpec:
    name: str
    windows: JoinWindows
    pair: PairFn
    left_outer: bool
    right_outer: bool
    this_store: str
    other_store: str
    outer_store: str | None
    key_serde: Any
    left_serde: Any
    right_serde: Any
    # One JoinState per task, found through the task's own instance of the left store.
    states: weakref.WeakKeyDictionary[Any, JoinState] = field(
        default_factory=weakref.WeakKeyDictionary, compare=False
    )


class JoinState:
    """What both sides of one join in one task share."""

    def __init__(self, seed: int) -> None:
        self.stream_time = -1
        # the newest timestamp each side's store holds: what it still shows is measured
        # from there (Kafka Streams' window stores expire by their own stream time)
        self.newest = {_LEFT: -1, _RIGHT: -1}
        self.seq = seed & _SEQ_MASK
        self.loaded = False
        # side byte + binary key -> (key, value bytes, order): outer-side records with no
        # partner yet; ``order`` is their place in ``queue``
        self.waiting: dict[bytes, tuple[Any, bytes, _Order]] = {}
        # the waiting records in Kafka Streams' outer store order: timestamp, side (right
        # first), key bytes, then arrival
        self.queue: SortedList = SortedList()
        self.arrivals = 0
        self.min_time = _NO_MIN_TIME

    def wait(self, wkey: bytes, key: Any, kb: bytes, ts: int, left: bool, data: bytes) -> None:
        self.arrivals += 1
        order = (ts, 1 if left else 0, kb, self.arrivals, wkey)
        self.waiting[wkey] = (key, data, order)
        self.queue.add(order)

    def stop_waiting(self, wkey: bytes) -> bool:
        entry = self.waiting.pop(wkey, None)
        if entry is None:
            return False
        self.queue.remove(entry[2])
        return True

    def next_seq(self) -> int:
        self.seq = (self.seq + 1) & _SEQ_MASK
        return self.seq


_Order = tuple[
    int, int, bytes, int, bytes
]  # (timestamp, 0 right / 1 left, key bytes, arrival, wkey)


class _Side:
    """How records of one side are joined: its store, the other side's, its reach."""

    def __init__(self, left: bool, spec: StreamJoinSpec, context: ProcessorContext) -> None:
        windows = spec.windows
        self.left = left
        self.tag = _LEFT if left else _RIGHT
        self.other_tag = _RIGHT if left else _LEFT
        self.reach = windows.reach(left)
        self.other_reach = windows.reach(not left)
        self.grace = windows.grace_ms
        # Kafka Streams' join stores keep before + after + grace; when that is 0 they show
        # nothing and its join pairs nothing at all, where headrace still pairs records
        # at the newest timestamp (see docs/differences-from-kafka-streams.md)
        self.lookback = max(1, windows.size_ms + windows.grace_ms)
        self.outer = spec.left_outer if left else spec.right_outer
        self.other_outer = spec.right_outer if left else spec.left_outer
        own, other = (
            (spec.this_store, spec.other_store) if left else (spec.other_store, spec.this_store)
        )
        self.own = context.get_state_store(own).inner.raw
        self.other = context.get_state_store(other).inner.raw
        own_serde, other_serde = (
            (spec.left_serde, spec.right_serde) if left else (spec.right_serde, spec.left_serde)
        )
        self.ev = encoder(own_serde, context.application_id + "-" + own + "-changelog")
        self.dv_other = decoder(other_serde, context.application_id + "-" + other + "-changelog")
        pair = spec.pair
        self.pair: PairFn = (
            pair if left else (lambda k, right, left_value: pair(k, left_value, right))
        )


class StreamJoinProcessor(BatchProcessor):
    """Joins the records of one side (or of both, for a stream joined with itself)."""

    def __init__(self, spec: StreamJoinSpec, sides: tuple[bool, ...]) -> None:
        self._spec = spec
        self._side_flags = sides

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        spec = self._spec
        self._sides = tuple(_Side(left, spec, context) for left in self._side_flags)
        topic = f"{context.application_id}-{spec.this_store}-changelog"
        self._ek = encoder(spec.key_serde, topic)
        self._dk = decoder(spec.key_serde, topic)
        self._dl = decoder(spec.left_serde, topic)
        self._dr = decoder(
            spec.right_serde, f"{context.application_id}-{spec.other_store}-changelog"
        )
        self._outer = (
            None if spec.outer_store is None else context.get_state_store(spec.outer_store)
        )
        anchor = context.get_state_store(spec.this_store)
        state = spec.states.get(anchor)
        if state is None:
            state = spec.states[anchor] = JoinState(time.time_ns() >> 10)
        self._state = state
        self._key_cache: dict[Any, bytes] = {}

    def _load(self) -> None:
        """Rebuild the waiting records from the outer store (restored by now)."""
        state = self._state
        state.loaded = True
        if self._outer is None:
            return
        for wkey, data in self._outer.all():
            kb = wkey[1:-12]
            timestamp = int.from_bytes(wkey[-12:-4], "big")
            state.wait(wkey, self._dk(kb), kb, timestamp, wkey[:1] == _LEFT, data)
        # As Kafka Streams' time tracker after a restart, the min time stays unset, which
        # lets the first record at the stream time walk the restored records.

    def process_batch(self, batch: list[Rec]) -> None:
        state = self._state
        if not state.loaded:
            self._load()
        out: list[Rec] = []
        sides = self._sides
        # the record's side's "after" (Kafka Streams' joinAfterMs) gates the emission
        gate = sides[0].reach + sides[0].grace
        outer = self._outer is not None
        for k, v, ts, h, o in batch:
            if ts > state.stream_time:
                state.stream_time = ts
            if v is None:
                continue
            if k is None:
                for side in sides:
                    if side.outer:
                        out.append((k, side.pair(k, v, None), ts, h, o))
                continue
            if outer and ts == state.stream_time and _gate_passes(state.min_time, gate, ts):
                self._emit_closed(out, o)
            try:
                kb = self._key_cache.get(k)
                if kb is None:
                    if len(self._key_cache) >= 65_536:
                        self._key_cache.clear()
                    kb = self._key_cache[k] = self._ek(k)
            except TypeError:  # an unhashable key
                kb = self._ek(k)
            for side in sides:
                self._join_one(side, k, kb, v, ts, h, o, out)
        if out:
            self.context.forward_batch(out)

    def _join_one(
        self, side: _Side, k: Any, kb: bytes, v: Any, ts: int, h: Any, o: int, out: list[Rec]
    ) -> None:
        state = self._state
        now = state.stream_time
        newest = state.newest
        # Partners lie in [ts - other_reach, ts + reach], among what the other side's
        # store still shows: timestamps after its newest one minus the lookback.
        lo = ts - side.other_reach
        visible = newest[side.other_tag] - side.lookback + 1
        if visible > lo:
            lo = visible
        hi = ts + side.reach
        paired = False
        if hi >= 0 and hi >= lo:
            waiting = state.waiting if side.other_outer else None
            pair, dv = side.pair, side.dv_other
            for binary, data in side.other.scan_raw(kb, kb, lo if lo > 0 else 0, hi):
                paired = True
                other_ts = int.from_bytes(binary[-12:-4], "big")
                out.append((k, pair(k, v, dv(data)), ts if ts > other_ts else other_ts, h, o))
                if waiting:
                    wkey = side.other_tag + binary
                    if state.stop_waiting(wkey):
                        self._outer.put(wkey, None)  # type: ignore[union-attr]
        own_newest = newest[side.tag]
        if ts > own_newest:
            newest[side.tag] = own_newest = ts
        data = side.ev(v)
        binary = kb + ts.to_bytes(8, "big") + state.next_seq().to_bytes(4, "big")
        if ts > own_newest - side.lookback:  # else its store would hide it at once
            side.own.put_raw(binary, data)
        if side.outer and not paired:
            if ts + side.reach < now:
                out.append((k, side.pair(k, v, None), ts, h, o))
            else:
                wkey = side.tag + binary
                state.wait(wkey, k, kb, ts, side.left, data)
                if ts < state.min_time:
                    state.min_time = ts
                self._outer.put(wkey, data)  # type: ignore[union-attr]

    def _emit_closed(self, out: list[Rec], offset: int) -> None:
        """Emit, unmatched, the waiting records whose windows closed, walking them in
        Kafka Streams' outer store order (see the module's step 2); the walk leaves the
        min time at the timestamp of the record it stopped at."""
        state = self._state
        now = state.stream_time
        windows = self._spec.windows
        left_open_until = now - windows.after_ms - windows.grace_ms
        right_open_until = now - windows.before_ms - windows.grace_ms
        pair, outer, waiting = self._spec.pair, self._outer, state.waiting
        assert outer is not None
        min_time = _NO_MIN_TIME
        left_open = right_open = False
        done: list[_Order] = []
        for order in state.queue:
            ts = min_time = order[0]
            if left_open and right_open:
                break
            if order[1]:
                if ts >= left_open_until:
                    left_open = True
                    continue
            elif ts >= right_open_until:
                right_open = True
                continue
            done.append(order)
        state.min_time = min_time
        for order in done:
            wkey = order[4]
            key, data, _order = waiting.pop(wkey)
            state.queue.remove(order)
            outer.put(wkey, None)
            left_value = self._dl(data) if order[1] else None
            right_value = None if order[1] else self._dr(data)
            out.append((key, pair(key, left_value, right_value), order[0], (), offset))


@dataclass(eq=False)
class StreamStreamJoinNode(GraphNode):
    """Writes the join's stores, one processor per side (one for a self-join) and the
    node that merges their output, named after the join."""

    spec: StreamJoinSpec | None = None
    store_builders: tuple[Any, ...] = ()
    self_join: bool = False

    def write_to_topology(self, topology: Topology) -> None:
        spec = self.spec
        assert spec is not None
        for store in self.store_builders:
            topology.add_state_store(store)
        stores = tuple(s.name for s in self.store_builders)
        this, other = f"{self.name}-this", f"{self.name}-other"
        parents = self.parent_names()
        if self.self_join:
            topology.add_processor(
                this, lambda: StreamJoinProcessor(spec, (True, False)), parents[0]
            )
            topology.connect_processor_and_state_stores(this, *stores)
            topology.add_processor(self.name, lambda: Transform(pass_through), this)
            return
        topology.add_processor(this, lambda: StreamJoinProcessor(spec, (True,)), parents[0])
        topology.add_processor(other, lambda: StreamJoinProcessor(spec, (False,)), parents[1])
        topology.connect_processor_and_state_stores(this, *stores)
        topology.connect_processor_and_state_stores(other, *stores)
        topology.add_processor(self.name, lambda: Transform(pass_through), this, other)
