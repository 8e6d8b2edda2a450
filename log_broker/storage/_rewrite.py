"""Step 4 of a cleaning pass: copy runs of closed segments into ``.cleaned`` segments,
deciding batch by batch what stays.

Per batch, below the pass's end (the key map's end; from there on batches are copied
as they are):

- plain and committed transactional records stay if no later offset in the key map has
  their key and they are not tombstones past ``delete.retention.ms`` (keyless ones go);
  a rebuilt batch keeps its transactional flag, producer id and epoch;
- aborted transactional batches go whole: no read_committed reader can see them;
- batches of undecided transactions (no marker in the closed segments) stay whole;
- each producer's last batch and last data batch stay, emptied if nothing of them is
  kept, so that a rebuild of producer state from the log still finds its epoch and
  sequence; so does the batch that ends where the pass ends;
- markers (control batches) follow ``_markers``: one stays while any batch of its
  transaction does, and goes a delete horizon after the pass that first finds none.
"""

from __future__ import annotations

from ..records import _batches as _records
from ._cleaner_checkpoint import CleanerCheckpoint
from ._compaction import CLEANED, step
from ._config import TopicConfig
from ._log import LogState, PartitionLog
from ._markers import MarkerRules
from ._retain import read_batches, retained
from ._segment import LogSegment, segment_name
from ._txn_scan import Fate, TxnScan

_MAX_RELATIVE_OFFSET = 2**31 - 1


class PassAborted(Exception):
    """The log changed under the pass (closed, deleted, segments removed)."""


class Rewrite:
    """The decision for each batch of the segments being rewritten (rules above).

    ``latest`` maps each key to its last offset below ``end`` (the key map).
    """

    def __init__(
        self,
        latest: dict[bytes, int],
        end: int,
        txns: TxnScan,
        checkpoint: CleanerCheckpoint,
        now_ms: int,
        config: TopicConfig,
        markers: MarkerRules,
    ) -> None:
        self._latest = latest
        self._end = end
        self._txns = txns
        self._last_batches = txns.last_batches
        self._checkpoint = checkpoint
        self._now_ms = now_ms
        self._config = config
        self.markers = markers
        self._dropped = 0

    @property
    def dropped(self) -> int:
        """Data records and markers removed so far."""
        return self._dropped + self.markers.dropped

    def batch(self, chunk: bytes, header: _records.BatchHeader) -> bytes | memoryview | None:
        """The batch as this pass leaves it: as it is, rebuilt, or None (removed)."""
        whole = memoryview(chunk)[header.position : header.position + header.size]
        if header.last_offset >= self._end:
            return whole  # not compacted by this pass
        # The pass's last batch stays too (Kafka's rule): with an empty active segment
        # after it, nothing else would be left to read between it and the log end, and
        # a reader at those offsets would get nothing back.
        last = header.base_offset in self._last_batches or header.last_offset + 1 == self._end
        if header.is_control:
            return self.markers.decide(chunk, header, whole, last)
        fate = self._txns.fate(header)
        if fate is Fate.UNDECIDED:
            return whole
        if fate is Fate.ABORTED:
            self._dropped += header.records_count
            kept = retained(chunk, header, _drop, keep_empty=last)
        else:
            kept = retained(chunk, header, self._decide, keep_empty=last)
        if kept is None and fate is not Fate.PLAIN:
            self.markers.data_removed(header)
        return kept

    def _decide(self, offset: int, key: bytes | None, has_value: bool) -> bool:
        keep = (
            key is not None
            and self._latest.get(key, -1) <= offset
            and (has_value or _tombstone_kept(self._checkpoint, offset, self._now_ms, self._config))
        )
        self._dropped += not keep
        return keep


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
                    header.base_offset,
                    position,
                    len(kept),
                    _records.read_header(kept, 0).max_timestamp,
                )
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
