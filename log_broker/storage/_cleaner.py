"""The log cleaner: which compacted logs need cleaning, and one cleaning pass over a log.

A pass over one log, in order (the shape of Kafka's LogCleaner):

1. Plan, from a snapshot of the closed segments (the active one is never cleaned). The
   dirty section runs from the first dirty offset (``_cleaner_checkpoint``) to the
   cleanable end: the first closed segment holding a record younger than
   ``min.compaction.lag.ms``, else the active segment, and never past the bound the
   caller passes (the broker's last stable offset of the partition). The log is
   cleaned when the dirty bytes reach ``min.cleanable.dirty.ratio`` of the clean plus
   dirty bytes, or when its oldest dirty record is older than ``max.compaction.lag.ms``,
   or when the last pass asked for another by now (``revisit_ms``: transaction markers
   it could stamp or remove then); such a pass rewrites the clean part even if
   nothing is dirty.
2. Transactions (``_txn_scan``): every batch of the closed segments is read once, in
   order (and on into the active segment while a transaction begun before it has no
   marker), to learn which transactional batches were committed, which aborted and
   which have no marker yet, and each producer's last batch. The dirty section also
   ends at the first offset of the oldest transaction without a marker.
3. Key map: the latest offset of every key in the dirty section, from plain and
   committed transactional records (aborted and undecided ones supersede nothing). If
   the map outgrows ``max_map_bytes`` the section ends early, at a segment boundary.
4. Rewrite, group by group: the closed segments from the log's first up to the map's
   end, in runs of at most ``segment.bytes``, are copied batch by batch into a
   ``.cleaned`` segment (indexes built as it is written, then fsynced). Below the
   map's end a plain or committed record stays only if no later offset in the map has
   its key and it is not an expired tombstone (keyless records go); aborted batches go
   whole; undecided batches stay whole; markers follow ``_markers``. A producer's
   last batch and last data batch stay, emptied if nothing of them is kept. Batches from the
   map's end on are copied as they are. ``PartitionLog.replace_segments`` swaps the
   result in: the only step that takes the log's lock, so appends and reads go on
   during the pass.
5. Checkpoint: the first dirty offset moves to the map's end, the range just
   compacted starts its tombstone clock (``delete.retention.ms``) at the pass time,
   and the markers' revisit time is stored.

A pass that finds its log closed, deleted or trimmed by retention under it stops and
deletes what it wrote; the next pass starts again from the checkpoint.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..records import _batches as _records
from ._cleaner_checkpoint import (
    CLEANER_CHECKPOINT_FILE,
    CleanerCheckpoint,
    read_checkpoint,
    write_checkpoint,
)
from ._errors import LogClosedError, StorageError
from ._keys import batch_keys
from ._log import LogState, PartitionLog
from ._markers import AbortedIndex, AbortedIndexOf, MarkerRules, replay_points
from ._retain import read_batches
from ._retention import largest_timestamp
from ._rewrite import PassAborted, Rewrite, groups, write_group
from ._segment import LogSegment
from ._txn_scan import Fate, TxnScan

log = logging.getLogger("headrace.broker.cleaner")

DEFAULT_MAX_MAP_BYTES = 64 * 1024 * 1024
_ENTRY_OVERHEAD = 100  # a dict slot, an int and a bytes object's header, roughly
_ACTIVE_CHUNK = 1 << 20

# Per log: the offset a pass must not compact beyond (the partition's last stable
# offset), or None if the caller knows of no bound.
CleanUpTo = Callable[[PartitionLog], int | None]


@dataclass(frozen=True, slots=True)
class CleanStats:
    topic: str
    partition: int
    first_dirty_offset: int
    dirty_end_offset: int  # everything below it is now compacted
    bytes_before: int
    bytes_after: int
    records_dropped: int  # data records and markers


@dataclass(frozen=True, slots=True)
class CleanPlan:
    segments: list[LogSegment]  # closed segments, oldest first
    dirty: list[LogSegment]  # the cleanable dirty section
    first_dirty_offset: int
    dirty_ratio: float
    checkpoint: CleanerCheckpoint
    upper_bound: int | None = None  # compact nothing at or past this offset
    revisit: bool = False  # the last pass asked for this one (markers to stamp or remove)


def plan(
    partition_log: PartitionLog, now_ms: int, upper_bound: int | None = None
) -> CleanPlan | None:
    """What a pass over ``partition_log`` would clean now, or None if nothing is due;
    nothing at or past ``upper_bound`` counts as dirty."""
    config = partition_log.config
    if not config.compact:
        return None
    try:
        segments = partition_log.closed_segments()
    except LogClosedError:
        return None
    checkpoint = read_checkpoint(partition_log.directory / CLEANER_CHECKPOINT_FILE)
    first_dirty = checkpoint.first_dirty_offset
    if first_dirty > partition_log.log_end_offset:
        first_dirty = 0  # the log lost its tail in recovery: all of it is dirty again
    first_dirty = max(first_dirty, partition_log.log_start_offset)
    young_after = now_ms - config.min_compaction_lag_ms
    clean_bytes = 0
    dirty: list[LogSegment] = []
    for segment in segments:
        if segment.next_offset <= first_dirty:
            clean_bytes += segment.size
        elif upper_bound is not None and max(segment.base_offset, first_dirty) >= upper_bound:
            break  # unstable from here on: an open transaction may still decide it
        elif config.min_compaction_lag_ms > 0 and largest_timestamp(segment) > young_after:
            break  # holds a record too young to compact; so may every later one
        else:
            dirty.append(segment)
    revisit = checkpoint.revisit_ms is not None and checkpoint.revisit_ms <= now_ms
    if not dirty:
        return (
            CleanPlan(segments, [], first_dirty, 0.0, checkpoint, upper_bound, revisit=True)
            if revisit and segments
            else None
        )
    dirty_bytes = sum(segment.size for segment in dirty)
    ratio = dirty_bytes / max(clean_bytes + dirty_bytes, 1)
    oldest = dirty[0].roll_base_ms
    if oldest is None:
        oldest = largest_timestamp(dirty[0])
    overdue = now_ms - oldest > config.max_compaction_lag_ms
    if ratio < config.min_cleanable_dirty_ratio and not overdue and not revisit:
        return None
    return CleanPlan(segments, dirty, first_dirty, ratio, checkpoint, upper_bound, revisit)


def clean_log(
    partition_log: PartitionLog,
    cleaning: CleanPlan,
    now_ms: int,
    *,
    max_map_bytes: int = DEFAULT_MAX_MAP_BYTES,
    aborted: AbortedIndex | None = None,
) -> CleanStats | None:
    """Run one pass (steps in the module docstring); None if it was aborted or found
    nothing it may compact (an open transaction at the first dirty offset) and was not
    asked to revisit the clean part. ``aborted`` is the log's aborted-transaction
    index, without which ABORT markers stay (``_markers``)."""
    config = partition_log.config
    try:
        replays = replay_points(partition_log.directory)
        txns = _scan(partition_log, cleaning.segments)
        stop = cleaning.dirty[-1].next_offset if cleaning.dirty else cleaning.first_dirty_offset
        for bound in (cleaning.upper_bound, txns.first_undecided):
            if bound is not None:
                stop = min(stop, bound)
        if stop > cleaning.first_dirty_offset:
            key_map = _key_map(partition_log, cleaning, txns, stop, max_map_bytes)
        elif cleaning.revisit:
            key_map = _KeyMap({}, stop)  # the clean part only: nothing new supersedes it
        else:
            return None
        markers = MarkerRules(txns, now_ms, config.delete_retention_ms, replays, aborted)
        rewrite = Rewrite(
            key_map.latest, key_map.end, txns, cleaning.checkpoint, now_ms, config, markers
        )
        before = after = 0
        sources = [s for s in cleaning.segments if s.base_offset < key_map.end]
        for group in groups(sources, config.segment_bytes):
            cleaned = write_group(partition_log, group, rewrite)
            if not partition_log.replace_segments(group, cleaned):
                cleaned.close()
                cleaned.unlink()
                raise PassAborted
            before += sum(segment.size for segment in group)
            after += cleaned.size
        write_checkpoint(
            partition_log.directory / CLEANER_CHECKPOINT_FILE,
            cleaning.checkpoint.after_pass(
                key_map.end, now_ms, config.delete_retention_ms, markers.revisit_ms
            ),
        )
    except (PassAborted, FileNotFoundError):
        return None
    except OSError:
        if partition_log.state is not LogState.OPEN:
            return None  # deleted under the pass: its directory is gone
        raise
    return CleanStats(
        partition_log.topic,
        partition_log.partition,
        cleaning.first_dirty_offset,
        key_map.end,
        before,
        after,
        rewrite.dropped,
    )


def _scan(partition_log: PartitionLog, segments: list[LogSegment]) -> TxnScan:
    """Step 2: every batch of the closed segments, in order, into a ``TxnScan``; then
    on into the active segment while a transaction begun in the closed ones has no
    marker yet, as far as the log reached when the scan got there (a marker written
    after that is found by a later pass)."""
    txns = TxnScan()
    for segment in segments:
        for chunk, header in read_batches(segment.path, segment.size):
            if partition_log.state is not LogState.OPEN:
                raise PassAborted
            txns.add(chunk, header)
    closed_end = segments[-1].next_offset if segments else 0
    offset, end = closed_end, partition_log.log_end_offset
    while offset < end and _undecided_below(txns, closed_end):
        try:
            data = partition_log.read(offset, _ACTIVE_CHUNK, upper_bound=end)
        except StorageError as exc:  # closed, or retention moved the start past us
            raise PassAborted from exc
        following = offset
        for header in _records.scan_batches(data, verify_crc=False):
            txns.add(data, header)
            following = header.last_offset + 1
        if following == offset:
            break
        offset = following
    return txns


def _undecided_below(txns: TxnScan, offset: int) -> bool:
    first = txns.first_undecided
    return first is not None and first < offset


@dataclass(slots=True)
class _KeyMap:
    latest: dict[bytes, int]  # key -> offset of its last record in the dirty section
    end: int  # the dirty section as far as the map covers it ends here


def _key_map(
    partition_log: PartitionLog,
    cleaning: CleanPlan,
    txns: TxnScan,
    stop: int,
    max_map_bytes: int,
) -> _KeyMap:
    """Step 3: the keys of the dirty section's decided records below ``stop``."""
    latest: dict[bytes, int] = {}
    used = 0
    first_dirty = cleaning.first_dirty_offset
    end = first_dirty
    for segment in cleaning.dirty:
        for chunk, header in read_batches(segment.path, segment.size):
            if partition_log.state is not LogState.OPEN:
                raise PassAborted
            if header.base_offset >= stop:
                break
            if header.is_control or txns.fate(header) in (Fate.ABORTED, Fate.UNDECIDED):
                continue  # markers hold no data; these records supersede nothing
            for offset, key, _ in batch_keys(chunk, header):
                if key is None or offset < first_dirty:
                    continue
                if key not in latest:
                    used += len(key) + _ENTRY_OVERHEAD
                latest[key] = offset
        end = min(segment.next_offset, stop)
        if used >= max_map_bytes or end == stop:
            break
    return _KeyMap(latest, end)


class Cleaner:
    """Cleans a broker's compacted logs, one pass at a time, dirtiest log first.

    Each log is cleaned in isolation: whatever goes wrong with one (damaged bytes, a
    full disk, a bug) is logged with its partition, counted in ``failures``, and that
    log alone waits before its next try, twice as long after each failure in a row
    (``retry_backoff_ms`` up to ``max_retry_backoff_ms``); the other logs, the group
    offsets among them, are cleaned as usual.
    """

    def __init__(
        self,
        *,
        max_map_bytes: int = DEFAULT_MAX_MAP_BYTES,
        retry_backoff_ms: int = 15_000,
        max_retry_backoff_ms: int = 3_600_000,
    ) -> None:
        self.max_map_bytes = max_map_bytes
        self.retry_backoff_ms = retry_backoff_ms
        self.max_retry_backoff_ms = max_retry_backoff_ms
        self.failures = 0  # passes over one log that failed, since start
        # One pass at a time: a second caller returns at once instead of waiting.
        self._running = threading.Lock()
        # Logs whose last pass could compact nothing (an open transaction at their
        # first dirty offset), with the shape of the log it found so: the same shape
        # again would only read the log again to find the same.
        self._stalled: dict[PartitionLog, tuple[object, ...]] = {}
        # Logs whose last passes failed: (failures in a row, not before this time).
        self._failing: dict[PartitionLog, tuple[int, int]] = {}

    def run(
        self,
        logs: Iterable[PartitionLog],
        now_ms: int,
        clean_up_to: CleanUpTo | None = None,
        aborted_index: AbortedIndexOf | None = None,
    ) -> list[CleanStats]:
        """Clean every log that is due, none beyond ``clean_up_to(log)`` (if given),
        releasing aborted transactions from ``aborted_index(log)`` (if given; see
        ``_markers``); returns what each pass did."""
        if not self._running.acquire(blocking=False):
            return []
        try:
            due: list[tuple[CleanPlan, PartitionLog, int | None]] = []
            for each in logs:
                if self._waiting(each, now_ms):
                    continue
                try:
                    bound = None if clean_up_to is None else clean_up_to(each)
                    found = plan(each, now_ms, bound)
                except Exception:
                    self._failed(each, now_ms)
                    continue
                if found is not None:
                    due.append((found, each, bound))
            due.sort(key=lambda item: item[0].dirty_ratio, reverse=True)
            done = []
            for _, each, bound in due:
                try:
                    stats = self._clean(each, now_ms, bound, aborted_index)
                except Exception:
                    self._failed(each, now_ms)
                    continue
                self._failing.pop(each, None)
                if stats is not None:
                    done.append(stats)
            for gone in [each for each in self._stalled if each.state is not LogState.OPEN]:
                del self._stalled[gone]
            for gone in [each for each in self._failing if each.state is not LogState.OPEN]:
                del self._failing[gone]
            return done
        finally:
            self._running.release()

    def _clean(
        self,
        each: PartitionLog,
        now_ms: int,
        bound: int | None,
        aborted_index: AbortedIndexOf | None,
    ) -> CleanStats | None:
        fresh = plan(each, now_ms, bound)  # an earlier pass took time: look again
        if fresh is None or self._stalled.get(each) == _shape(each, fresh):
            return None
        aborted = None if aborted_index is None else aborted_index(each)
        stats = clean_log(each, fresh, now_ms, max_map_bytes=self.max_map_bytes, aborted=aborted)
        if stats is not None:
            self._stalled.pop(each, None)
        elif each.state is LogState.OPEN:
            self._stalled[each] = _shape(each, fresh)
        return stats

    def _waiting(self, each: PartitionLog, now_ms: int) -> bool:
        failing = self._failing.get(each)
        return failing is not None and now_ms < failing[1]

    def _failed(self, each: PartitionLog, now_ms: int) -> None:
        if each.state is not LogState.OPEN:
            return  # closed or deleted under the pass: nothing is wrong with it
        in_a_row = self._failing.get(each, (0, 0))[0] + 1
        wait_ms = min(self.retry_backoff_ms * 2 ** (in_a_row - 1), self.max_retry_backoff_ms)
        self._failing[each] = (in_a_row, now_ms + wait_ms)
        self.failures += 1
        log.exception(
            "cannot clean %s-%d (failure %d in a row); other partitions go on, this one "
            "is tried again in %d ms",
            each.topic,
            each.partition,
            in_a_row,
            wait_ms,
        )


def _shape(partition_log: PartitionLog, cleaning: CleanPlan) -> tuple[object, ...]:
    # The log end too: the marker a stalled pass waited for may be in the active segment.
    return (
        cleaning.first_dirty_offset,
        cleaning.upper_bound,
        partition_log.log_end_offset,
        cleaning.revisit,
        tuple((segment.base_offset, segment.size) for segment in cleaning.segments),
    )
