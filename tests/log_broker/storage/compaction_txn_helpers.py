"""Transactional writes to a partition log, and a read_committed reader, for tests of
compacting transactional data.

``Writer`` appends batches the way the broker would accept them: each producer's
sequence numbers go on from its last batch, and markers are control batches.
``read_committed`` follows what a Kafka consumer does with a read_committed fetch
(the Java consumer's ``CompletedFetch``, librdkafka's msgset reader): it reads up to
the last stable offset, is told the aborted transactions overlapping what it read, and
skips a producer's transactional batches from the first offset of such a transaction
until it reads that producer's abort marker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headrace.log_broker._txn_partitions import ABORTED_INDEX, SNAPSHOT_SUFFIX, PartitionTxn, load
from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import PartitionLog
from headrace.log_broker.storage._cleaner import Cleaner, CleanStats
from headrace.transactions import AbortedTxn, AbortedTxnIndex

Pair = tuple[bytes, bytes | None]
Seen = tuple[int, bytes | None, bytes | None]  # offset, key, value


@dataclass
class Writer:
    log: PartitionLog
    now_ms: int = 0
    sequences: dict[int, int] = field(default_factory=dict)

    def plain(self, pairs: Sequence[Pair]) -> int:
        return self._append(pairs, producer_id=-1, transactional=False)

    def idempotent(self, producer_id: int, pairs: Sequence[Pair]) -> int:
        return self._append(pairs, producer_id=producer_id, transactional=False)

    def txn(
        self,
        producer_id: int,
        pairs: Sequence[Pair],
        compression: _records.Compression = _records.Compression.NONE,
    ) -> int:
        return self._append(
            pairs, producer_id=producer_id, transactional=True, compression=compression
        )

    def marker(self, producer_id: int, *, commit: bool, epoch: int = 0) -> int:
        batch = _records.encode_control_batch(
            producer_id=producer_id,
            producer_epoch=epoch,
            commit=commit,
            coordinator_epoch=0,
            timestamp_ms=self.now_ms,
        )
        return self.log.append(bytearray(batch), now_ms=self.now_ms, allow_control=True).base_offset

    def _append(
        self,
        pairs: Sequence[Pair],
        *,
        producer_id: int,
        transactional: bool,
        compression: _records.Compression = _records.Compression.NONE,
    ) -> int:
        records = [_records.Record(i, 1_000 + i, k, v) for i, (k, v) in enumerate(pairs)]
        sequence = -1
        if producer_id >= 0:
            sequence = self.sequences.get(producer_id, 0)
            self.sequences[producer_id] = sequence + len(pairs)
        batch = _records.encode_batch(
            records,
            compression=compression,
            producer_id=producer_id,
            producer_epoch=0 if producer_id >= 0 else -1,
            base_sequence=sequence,
            is_transactional=transactional,
        )
        return self.log.append(bytearray(batch), now_ms=self.now_ms).base_offset


def batches(log: PartitionLog) -> list[tuple[bytes, _records.BatchHeader]]:
    """(bytes of the whole read, header) for every batch, log start to end."""
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        assert data, f"empty read at {offset}"
        for header in _records.parse_batches(data):
            out.append((data, header))
            offset = header.last_offset + 1
    return out


def read_uncommitted(log: PartitionLog) -> list[Seen]:
    return [
        (r.offset, r.key, r.value)
        for data, header in batches(log)
        if not header.is_control
        for r in _records.decode_records(data, header)
    ]


def read_committed(log: PartitionLog, aborted: Sequence[AbortedTxn], stable: int) -> list[Seen]:
    """What a read_committed consumer reading from the log start sees, told of
    ``aborted`` as the broker's Fetch would (entries overlapping the bytes read)."""
    found = [(data, h) for data, h in batches(log) if h.base_offset < stable]
    end = found[-1][1].last_offset + 1 if found else -1
    start = log.log_start_offset
    pending = sorted(
        (a for a in aborted if a.last_offset >= start and a.first_offset < end),
        key=lambda a: a.first_offset,
    )
    aborted_producers: set[int] = set()
    seen: list[Seen] = []
    for data, header in found:
        pid = header.producer_id
        if pid >= 0:
            while pending and pending[0].first_offset <= header.last_offset:
                aborted_producers.add(pending.pop(0).producer_id)
            if header.is_control:
                records = _records.decode_records(data, header)
                if records and not _records.parse_control_record(records[0]).commit:
                    aborted_producers.discard(pid)
                continue
            if header.is_transactional and pid in aborted_producers:
                continue
        if header.is_control:
            continue
        seen.extend((r.offset, r.key, r.value) for r in _records.decode_records(data, header))
    return seen


def committed_view(log: PartitionLog) -> tuple[list[Seen], list[AbortedTxn], int]:
    """read_committed as the broker serves it now: the aborted-transaction index and
    LSO rebuilt from the log (as at a broker start without snapshots), and the records
    a consumer then sees."""
    state = load(log)
    aborted = state.aborted.entries()
    stable = state.last_stable_offset()
    return read_committed(log, aborted, stable), aborted, stable


def latest(seen: Sequence[Seen], below: int | None = None) -> dict[bytes | None, bytes | None]:
    out: dict[bytes | None, bytes | None] = {}
    for offset, key, value in seen:
        if below is None or offset < below:
            out[key] = value
    return out


class Tracked:
    """A partition log written as the broker writes it: its producer state and aborted
    index (``PartitionTxn``) follow every append, as produce and WriteTxnMarkers keep
    them, and cleaning passes release aborted transactions from that index."""

    def __init__(self, log: PartitionLog) -> None:
        self.log = log
        self.writer = Writer(log)
        self.live: PartitionTxn = load(log)
        self.index = ReleasingIndex(self.live)

    def plain(self, pairs: Sequence[Pair]) -> int:
        return self.writer.plain(pairs)

    def txn(
        self,
        producer_id: int,
        pairs: Sequence[Pair],
        compression: _records.Compression = _records.Compression.NONE,
    ) -> int:
        base = self.writer.txn(producer_id, pairs, compression)
        header = _records.parse_batches(bytearray(self.log.read(base, 1 << 20)))[0]
        self.live.producers.replay(header, base)
        return base

    def end(self, producer_id: int, *, commit: bool) -> int:
        offset = self.writer.marker(producer_id, commit=commit)
        self.live.record_completion(
            self.live.producers.complete(
                producer_id, 0, 0, commit=commit, offset=offset, timestamp=self.writer.now_ms
            )
        )
        return offset

    def committed(self) -> list[Seen]:
        """What a read_committed reader sees now, told what the broker's Fetch tells it."""
        return read_committed(self.log, self.live.aborted.entries(), self.live.last_stable_offset())

    def clean(self, now_ms: int, cleaner: Cleaner | None = None) -> list[CleanStats]:
        """One cleaning run, bounded by the live last stable offset, as the broker's."""
        return (cleaner or Cleaner()).run(
            [self.log], now_ms, lambda _: self.live.last_stable_offset(), lambda _: self.index
        )


class ReleasingIndex:
    """The ``AbortedIndex`` a cleaning pass releases aborted transactions from, over a
    partition's broker-side state (``PartitionTxn``): a released transaction leaves the
    in-memory index at once, and counts as released once the index file (what a
    restart loads) no longer lists it either, that is after the next ``checkpoint``."""

    def __init__(self, state: PartitionTxn) -> None:
        self.state = state
        self.released: list[tuple[int, int]] = []

    def release(self, producer_id: int, marker_offset: int) -> bool:
        entries = self.state.aborted.entries()
        kept = [
            e for e in entries if (e.producer_id, e.last_offset) != (producer_id, marker_offset)
        ]
        if len(kept) < len(entries):
            self.state.aborted = AbortedTxnIndex(kept)
            self.state.changed = True
            self.released.append((producer_id, marker_offset))
            return False
        path = self.state.log.directory / ABORTED_INDEX
        on_disk = AbortedTxnIndex.from_bytes(path.read_bytes()) if path.exists() else None
        return on_disk is None or all(
            (e.producer_id, e.last_offset) != (producer_id, marker_offset)
            for e in on_disk.entries()
        )


def unneeded_markers(log: PartitionLog) -> list[int]:
    return unneeded([h for _, h in batches(log)], snapshot_offsets(log.directory))


def snapshot_offsets(directory: Path) -> list[int]:
    """The offsets of the producer-state snapshots beside a partition's segments."""
    return [int(p.name.split(".")[0]) for p in directory.glob(f"*{SNAPSHOT_SUFFIX}")]


def unneeded(
    all_headers: Sequence[_records.BatchHeader], snapshots: Sequence[int] = ()
) -> list[int]:
    """Offsets of markers no reader or rebuild needs any more, found by brute force:
    no transactional data batch of their producer lies between the producer's previous
    marker and them, they are not the producer's last batch, and not its first marker
    at or after a snapshot (a rebuild replaying from there may need it to close a
    transaction the snapshot holds open)."""
    headers = [h for h in all_headers if h.producer_id >= 0]
    last = {h.producer_id: h.base_offset for h in headers}
    for_replay: set[Any] = set()
    for snapshot in snapshots:
        firsts: dict[int, int] = {}
        for h in headers:
            if h.is_control and h.base_offset >= snapshot:
                firsts.setdefault(h.producer_id, h.base_offset)
        for_replay.update(firsts.values())
    has_data: dict[int, bool] = {}
    found = []
    for h in headers:
        if not h.is_control:
            has_data[h.producer_id] = has_data.get(h.producer_id, False) or h.is_transactional
            continue
        if (
            not has_data.get(h.producer_id)
            and last[h.producer_id] != h.base_offset
            and h.base_offset not in for_replay
        ):
            found.append(h.base_offset)
        has_data[h.producer_id] = False
    return found
