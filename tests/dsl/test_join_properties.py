"""Stream-stream joins against a nested-loop reference over random timed streams.

The reference restates Kafka Streams' ``KStreamKStreamJoin`` in the plainest way:
records in arrival order, stream time the largest timestamp so far; each side's store
shows the records no more than before + after + grace behind the newest one it holds
(at least 1 ms: see docs/differences-from-kafka-streams.md); a new record pairs with every
record the other side's store shows in its window; an outer-side record with no partner
waits until its window closes, unless its window's span (grace not counted) already
ended, when it is emitted unmatched at once; waiting records are emitted when a record at
the stream time arrives and the oldest timestamp that waited since the last emission
(the min time) is past that record's side's after + grace, by a walk over the waiting
records in (timestamp, side (right first), key, arrival) order that skips those still
open and stops one record after it has seen an open record of each side, leaving the
min time at the last record it looked at (``KStreamKStreamJoin.emitNonJoinedOuterRecords``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headrace.dsl import JoinWindows, KStream, Serdes, StreamsBuilder
from headrace.streams.testing import TestRecord, TopologyTestDriver

S = Serdes.string()


@dataclass
class Rec:
    left: bool
    key: str
    value: str
    ts: int
    stored: bool = False
    paired: bool = False
    done: bool = False  # emitted unmatched
    waiting: bool = False


def reach(w: JoinWindows, r: Rec) -> int:
    return w.after_ms if r.left else w.before_ms


def close(w: JoinWindows, r: Rec) -> int:
    return r.ts + reach(w, r) + w.grace_ms


def pairs(w: JoinWindows, left: Rec, right: Rec) -> bool:
    return left.ts - w.before_ms <= right.ts <= left.ts + w.after_ms


def reference(records: list[Rec], w: JoinWindows, kind: str) -> list[tuple[str, str, int]]:
    def outer(r: Rec) -> bool:
        return kind == "outer" or (kind == "left" and r.left)

    def unmatched(r: Rec) -> tuple[str, str, int]:
        return (r.key, f"{r.value}+None" if r.left else f"None+{r.value}", r.ts)

    lookback = max(1, w.before_ms + w.after_ms + w.grace_ms)
    out = []
    now = -1
    no_min_time = 2**63 - 1
    min_time = no_min_time
    newest = {True: -1, False: -1}  # per side: the newest timestamp its store holds
    seen: list[Rec] = []
    for rec in records:
        now = max(now, rec.ts)
        gate = min_time + reach(w, rec) + w.grace_ms
        if gate >= 2**63:  # Java's long sum wraps past Long.MAX_VALUE
            gate -= 2**64
        if rec.ts == now and gate < now:
            min_time = no_min_time
            open_sides: set[bool] = set()
            in_store_order = sorted(
                (i for i, old in enumerate(seen) if old.waiting),
                key=lambda i: (seen[i].ts, seen[i].left, seen[i].key, i),
            )
            for i in in_store_order:
                old = seen[i]
                min_time = old.ts
                if len(open_sides) == 2:
                    break
                if close(w, old) >= now:
                    open_sides.add(old.left)
                    continue
                old.waiting, old.done = False, True
                out.append(unmatched(old))
        for old in seen:
            if old.left == rec.left or old.key != rec.key or not old.stored:
                continue
            if old.ts <= newest[old.left] - lookback:
                continue  # its store no longer shows it
            left, right = (rec, old) if rec.left else (old, rec)
            if pairs(w, left, right):
                old.paired = rec.paired = True
                old.waiting = False
                out.append((rec.key, f"{left.value}+{right.value}", max(rec.ts, old.ts)))
        newest[rec.left] = max(newest[rec.left], rec.ts)
        rec.stored = rec.ts > newest[rec.left] - lookback
        if outer(rec) and not rec.paired:
            if rec.ts + reach(w, rec) < now:
                rec.done = True
                out.append(unmatched(rec))
            else:
                rec.waiting = True
                min_time = min(min_time, rec.ts)
        seen.append(rec)
    return out


def run_join(chunks: list[list[Rec]], w: JoinWindows, kind: str) -> list[tuple[str, str, int]]:
    builder = StreamsBuilder()
    left = builder.stream("left", key_serde=S, value_serde=S)
    right = builder.stream("right", key_serde=S, value_serde=S)
    method: Any = {"inner": KStream.join, "left": KStream.left_join, "outer": KStream.outer_join}[
        kind
    ]
    joiner: Any = lambda a, b: f"{a}+{b}"  # noqa: E731
    method(left, right, joiner, w, store="memory", logging=False).to("out", value_serde=S)
    with TopologyTestDriver(builder.build(), {"application_id": "prop"}) as driver:
        topics = {
            True: driver.create_input_topic("left", S, S),
            False: driver.create_input_topic("right", S, S),
        }
        for chunk in chunks:  # one chunk is one batch of one side
            topics[chunk[0].left].pipe_records([TestRecord(r.key, r.value, r.ts) for r in chunk])
        output = driver.create_output_topic("out", S, S).read_records_to_list()
    return [(r.key, r.value, r.timestamp) for r in output if r.timestamp is not None]


@st.composite
def timed_streams(draw: st.DrawFn) -> tuple[list[list[Rec]], JoinWindows]:
    before = draw(st.integers(-3, 12))
    after = draw(st.integers(max(-before, -3), 12))
    grace = draw(st.integers(0, 8))
    windows = JoinWindows(before, after, grace)
    n = draw(st.integers(1, 40))
    chunks: list[list[Rec]] = []
    base = 0
    for i in range(n):
        left = draw(st.booleans())
        base += draw(st.integers(0, 4))
        ts = max(0, base - draw(st.integers(0, 3)) * draw(st.sampled_from([0, 0, 1, 5])))
        rec = Rec(left, draw(st.sampled_from("abc")), f"{'L' if left else 'R'}{i}", ts)
        if chunks and chunks[-1][0].left == left and draw(st.booleans()):
            chunks[-1].append(rec)
        else:
            chunks.append([rec])
    return chunks, windows


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=timed_streams(), kind=st.sampled_from(["inner", "left", "outer"]))
def test_join_matches_the_nested_loop_reference(
    data: tuple[list[list[Rec]], JoinWindows], kind: str
) -> None:
    chunks, windows = data
    flat = [Rec(r.left, r.key, r.value, r.ts) for chunk in chunks for r in chunk]
    expected = reference(flat, windows, kind)
    assert sorted(run_join(chunks, windows, kind)) == sorted(expected)


@settings(max_examples=60, deadline=None)
@given(data=timed_streams())
def test_every_in_window_pair_is_joined_once_when_nothing_is_late(
    data: tuple[list[list[Rec]], JoinWindows],
) -> None:
    """With grace covering all disorder, the inner join is exactly the set of pairs
    within the window: the plain definition, with no stream time involved."""
    chunks, windows = data
    flat = [r for chunk in chunks for r in chunk]
    disorder = max((max(r.ts for r in flat[: i + 1]) - r.ts for i, r in enumerate(flat)), default=0)
    windows = JoinWindows(
        windows.before_ms, windows.after_ms, disorder + max(0, windows.before_ms, windows.after_ms)
    )
    expected = [
        (lr.key, f"{lr.value}+{r.value}", max(lr.ts, r.ts))
        for lr in flat
        if lr.left
        for r in flat
        if not r.left and r.key == lr.key and pairs(windows, lr, r)
    ]
    assert sorted(run_join(chunks, windows, "inner")) == sorted(expected)
