"""Step 4 of a cleaning pass: copy runs of closed segments into ``.cleaned`` segments,
deciding batch by batch what stays.

Per batch, below the pass's end (the key map's end; from there on batches are copied
as they are):

- plain and committed transactional records stay if no later offset in the key map has
  their key and they are not tombstones past ``delete.retention.ms`` (keyless ones go);
  a rebuilt batch keeps its transactional flag, producer id and epoch;
- aborted transactional batches go whole: no read_committed reader can see them;
- batches of undecided transactions (no marker in the closed segments) stay whole;
- a producer's last batch stays, emptied if nothing of it is kept, so that a rebuild of
  producer state from the log still finds its epoch and sequence.

Markers (control batches):

- an ABORT marker is kept always: the broker's aborted-transaction index (above
  storage, not rewritten here) may still list its transaction, and a read_committed
  reader that is told of an aborted transaction skips that producer's transactional
  batches until it reads the abort marker;
- a COMMIT marker is kept while the pass's scan meets any batch of its transaction
  (empty ones included: a producer-state rebuild still reads those as the
  transaction's, and would take it for open without its marker). Once the scan meets
  none (a pass after the one that removed the last of its data) the marker is stamped
  with a delete horizon ``delete.retention.ms`` after that pass; the first pass after
  the horizon removes it (Kafka's two-pass rule);
- a producer's last batch is never removed, marker or not; an empty or unreadable
  control batch is kept.
"""

from __future__ import annotations

from .. import _records
from ._cleaner_checkpoint import CleanerCheckpoint
from ._compaction import CLEANED, step
from ._config import TopicConfig
from ._log import LogState, PartitionLog
from ._retain import delete_horizon, read_batches, retained, with_delete_horizon
from ._segment import LogSegment, segment_name
from ._txn_scan import Fate, TxnScan

_MAX_RELATIVE_OFFSET = 2**31 - 1


class PassAborted(Exception):
    """The log changed under the pass (closed, deleted, segments removed)."""


class Rewrite:
    """The decision for each batch of the segments being rewritten (rules above).

    ``latest`` maps each key to its last offset below ``end`` (the key map).
    """

    def __init__(self, latest: dict[bytes, int], end: int, txns: TxnScan,
                 checkpoint: CleanerCheckpoint, now_ms: int, config: TopicConfig) -> None:
        self._latest = latest
        self._end = end
        self._txns = txns
        self._last_batches = txns.last_batches
        self._checkpoint = checkpoint
        self._now_ms = now_ms
        self._config = config
        self.dropped = 0

    def batch(self, chunk: bytes, header: _records.BatchHeader) -> bytes | memoryview | None:
        """The batch as this pass leaves it: as it is, rebuilt, or None (removed)."""
        whole = memoryview(chunk)[header.position : header.position + header.size]
        if header.last_offset >= self._end:
            return whole  # not compacted by this pass
        last = header.base_offset in self._last_batches
        if header.is_control:
            return self._marker(chunk, header, whole, last)
        fate = self._txns.fate(header)
        if fate is Fate.UNDECIDED:
            return whole
        if fate is Fate.ABORTED:
            self.dropped += header.records_count
            return retained(chunk, header, _drop, keep_empty=last)
        return retained(chunk, header, self._decide, keep_empty=last)

    def _decide(self, offset: int, key: bytes | None, has_value: bool) -> bool:
        keep = key is not None and self._latest.get(key, -1) <= offset and (
            has_value or _tombstone_kept(self._checkpoint, offset, self._now_ms, self._config)
        )
        self.dropped += not keep
        return keep

    def _marker(self, chunk: bytes, header: _records.BatchHeader, whole: memoryview,
                last: bool) -> bytes | memoryview | None:
        txn = self._txns.marker(header.base_offset)
        if last or txn is None or txn.fate is not Fate.COMMITTED or txn.data_batches:
            return whole
        horizon = delete_horizon(header)
        if horizon is None:
            return with_delete_horizon(
                chunk, header, self._now_ms + self._config.delete_retention_ms
            )
        if horizon <= self._now_ms:
            self.dropped += header.records_count
            return None
        return whole


def _drop(offset: int, key: bytes | None, has_value: bool) -> bool:
    return False


def _tombstone_kept(
    checkpoint: CleanerCheckpoint, offset: int, now_ms: int, config: TopicConfig
) -> bool:
    # A tombstone survives the pass that first compacts it, and every pass until
    # delete.retention.ms after that one.
    cleaned_at = checkpoint.first_cleaned_at(offset)
    return cleaned_at is None or now_ms < cleaned_at + config.delete_retention_ms


def groups(segments: list[LogSegment], max_bytes: int) -> list[list[LogSegment]]:
    """Consecutive runs whose data fits one segment and whose offsets fit its index."""
    groups: list[list[LogSegment]] = []
    for segment in segments:
        current = groups[-1] if groups else None
        if (
            current is not None
            and sum(s.size for s in current) + segment.size <= max_bytes
            and segment.next_offset - current[0].base_offset <= _MAX_RELATIVE_OFFSET
        ):
            current.append(segment)
        else:
            groups.append([segment])
    return groups


def write_group(
    partition_log: PartitionLog, group: list[LogSegment], rewrite: Rewrite
) -> LogSegment:
    """Write the kept batches of ``group`` into a fsynced ``.cleaned`` segment."""
    base = group[0].base_offset
    for kind in (".log", ".index", ".timeindex"):  # left by a pass that was aborted
        (partition_log.directory / f"{segment_name(base)}{kind}{CLEANED}").unlink(missing_ok=True)
    cleaned = LogSegment(
        partition_log.directory, base, partition_log.config.index_interval_bytes, CLEANED
    )
    try:
        for source in group:
            for chunk, header in read_batches(source.path, source.size):
                if partition_log.state is not LogState.OPEN:
                    raise PassAborted
                kept = rewrite.batch(chunk, header)
                if kept is None:
                    continue
                position = cleaned.size
                cleaned.write(kept)
                cleaned.track(
                    header.base_offset, position, len(kept),
                    _records.read_header(kept, 0).max_timestamp,
                )  # fmt: skip
                cleaned.next_offset = header.last_offset + 1
                step("writing")
        cleaned.seal()
        cleaned.fsync()
    except BaseException:
        cleaned.close()
        cleaned.unlink()
        raise
    step("cleaned")
    return cleaned


