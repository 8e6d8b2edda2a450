"""Any interleaving of plain writes, transactions, markers, rolls, producer-state
snapshots and cleaning passes: after each pass the log reads, committed and
uncommitted, as before it, minus only what compaction may remove; every aborted
transaction the index lists still has its marker; producer state rebuilt from the
log (and its snapshots) is the live one; and in the end every marker nothing needs
any more is gone."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from compaction_helpers import compacted_log
from compaction_txn_helpers import (
    Seen,
    Tracked,
    batches,
    committed_view,
    read_uncommitted,
    unneeded_markers,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headrace.log_broker._txn_partitions import PartitionTxn, checkpoint, load
from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import PartitionLog

PRODUCERS = (1, 2, 3)
RETENTION_MS = 50
_END = [(b"end", b"end")]

_pairs = st.lists(
    st.tuples(
        st.sampled_from([b"a", b"b", b"c", b"d", b"e"]),
        st.one_of(st.none(), st.binary(min_size=1, max_size=4)),
    ),
    min_size=1,
    max_size=3,
)
_op = st.one_of(
    st.tuples(st.just("plain"), _pairs),
    st.tuples(
        st.just("txn"),
        st.sampled_from(PRODUCERS),
        _pairs,
        st.sampled_from([_records.Compression.NONE, _records.Compression.LZ4]),
    ),
    st.tuples(st.just("end"), st.sampled_from(PRODUCERS), st.booleans()),
    st.tuples(st.just("roll")),
    st.tuples(st.just("snap")),
    st.tuples(st.just("clean"), st.integers(min_value=0, max_value=2 * RETENTION_MS)),
)


class _Model:
    """The log as the broker keeps it (``Tracked``), and which offsets belong to open
    and to aborted transactions."""

    def __init__(self, log: PartitionLog) -> None:
        self.log = log
        self.tracked = Tracked(log)
        self.live: PartitionTxn = self.tracked.live
        self.open: dict[int, list[int]] = {}  # producer -> offsets of its open transaction
        self.aborted_offsets: set[int] = set()
        self.now_ms = 1_000_000

    def apply(self, op: tuple[object, ...]) -> None:
        kind, *args = op
        if kind == "roll":
            self.log.roll(0)
        else:
            getattr(self, str(kind))(*args)

    def snap(self) -> None:
        checkpoint(self.live)  # the index file, then a snapshot at the log end

    def plain(self, pairs: Sequence[tuple[bytes, bytes | None]]) -> None:
        self.tracked.plain(pairs)

    def txn(
        self, pid: int, pairs: Sequence[tuple[bytes, bytes | None]], codec: _records.Compression
    ) -> None:
        base = self.tracked.txn(pid, pairs, codec)
        self.open.setdefault(pid, []).extend(range(base, base + len(pairs)))

    def end(self, pid: int, commit: bool) -> None:
        self.tracked.end(pid, commit=commit)
        done = self.open.pop(pid, [])
        if not commit:
            self.aborted_offsets.update(done)

    def clean(self, advance_ms: int) -> None:
        self.now_ms += advance_ms
        before, committed_before = read_uncommitted(self.log), self.tracked.committed()
        raw_before = _raw(self.log)
        stats = self.tracked.clean(self.now_ms)
        after, committed_after = read_uncommitted(self.log), self.tracked.committed()
        end = stats[0].dirty_end_offset if stats else 0
        assert end <= self.live.last_stable_offset()
        # Only removals, nothing moved or changed; nothing from the pass's end on.
        assert set(after) <= set(before)
        assert [b for b in _raw(self.log) if b[0] >= end] == [b for b in raw_before if b[0] >= end]
        # No aborted record left below the end; every undecided one still there.
        assert not any(r[0] in self.aborted_offsets for r in after if r[0] < end)
        still_open = {o for offsets in self.open.values() for o in offsets}
        assert still_open <= {r[0] for r in after}
        # read_committed sees the same latest value per key, with the broker's live
        # index and with state rebuilt from the compacted log alone (a restart).
        assert set(committed_after) <= set(committed_before)
        assert _values(committed_after) == _values(committed_before)
        rebuilt, rebuilt_aborted, stable = committed_view(self.log)
        assert stable == self.live.last_stable_offset()
        assert _values(rebuilt) == _values(committed_before)
        # A reader told of an aborted transaction skips its producer's transactional
        # batches until the abort marker: every one listed must still have it.
        markers = {h.base_offset for _, h in batches(self.log) if h.is_control}
        for listed in (self.live.aborted.entries(), rebuilt_aborted):
            assert {a.last_offset for a in listed} <= markers
        state = load(self.log)
        assert state.producers.ongoing() == self.live.producers.ongoing()
        for live in self.live.producers.entries():
            if live.batches:  # its sequence and epoch must survive, to go on from them
                entry = state.producers.entry(live.producer_id)
                assert entry is not None
                assert (entry.epoch, entry.last_seq) == (live.epoch, live.last_seq)


def _raw(log: PartitionLog) -> list[tuple[int, bytes]]:
    return [(h.base_offset, data[h.position : h.position + h.size]) for data, h in batches(log)]


def _values(seen: Sequence[Seen]) -> dict[bytes | None, bytes]:
    out: dict[bytes | None, bytes | None] = {}
    for _offset, key, value in seen:
        out[key] = value
    return {k: v for k, v in out.items() if v is not None}  # expired tombstones: gone


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_op, min_size=1, max_size=40))
def test_any_transactional_log_compacts_like_the_model(
    tmp_path_factory: pytest.TempPathFactory,
    ops: list[tuple[object, ...]],
) -> None:
    log = compacted_log(
        tmp_path_factory.mktemp("txnmodel"), segment_bytes=300, delete_retention_ms=RETENTION_MS
    )
    model = _Model(log)
    for op in ops:
        model.apply(op)
    # Then: everything decided, compacted, released, and past two snapshots at the end.
    past = RETENTION_MS + 1
    for pid in list(model.open):
        model.end(pid, False)
    for op in [
        ("roll",),
        ("clean", 1),
        ("clean", past),
        ("clean", past),
        ("plain", _END),
        ("snap",),
        ("plain", _END),
        ("snap",),
        ("roll",),
        ("clean", past),
        ("snap",),
        ("clean", past),
        ("clean", past),
    ]:
        model.apply(op)
    assert unneeded_markers(log) == []
    final = read_uncommitted(log)
    log.close()
    reopened = compacted_log(
        log.directory.parent, segment_bytes=300, delete_retention_ms=RETENTION_MS
    )
    assert read_uncommitted(reopened) == final
    reopened.close()
