"""The log cleaner: which compacted logs need cleaning, and one cleaning pass over a log.

A pass over one log, in order (the shape of Kafka's LogCleaner):

1. Plan, from a snapshot of the closed segments (the active one is never cleaned). The
   dirty section runs from the first dirty offset (``_cleaner_checkpoint``) to the
   cleanable end: the first closed segment holding a record younger than
   ``min.compaction.lag.ms``, else the active segment. The log is cleaned when the
   dirty bytes reach ``min.cleanable.dirty.ratio`` of the clean plus dirty bytes, or
   when its oldest dirty record is older than ``max.compaction.lag.ms``.
2. Key map: the latest offset of every key in the dirty section. If the map outgrows
   ``max_map_bytes`` the section ends early, at a segment boundary. The same read
   finds each producer's last batch, which is kept even if every record of it goes
   (as an empty batch), so that its sequence numbers survive a producer state rebuild.
3. Rewrite, group by group: the closed segments from the log's first up to the map's
   end, in runs of at most ``segment.bytes``, are copied batch by batch into a
   ``.cleaned`` segment (indexes built as it is written, then fsynced), keeping a
   record only if no later offset in the map has its key and it is not an expired
   tombstone; keyless records are dropped. ``PartitionLog.replace_segments`` swaps the
   result in: the only step that takes the log's lock, so appends and reads go on
   during the pass.
4. Checkpoint: the first dirty offset moves to the map's end, and the range just
   compacted starts its tombstone clock (``delete.retention.ms``) at the pass time.

A pass that finds its log closed, deleted or trimmed by retention under it stops and
deletes what it wrote; the next pass starts again from the checkpoint.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from .. import _records
from ._cleaner_checkpoint import (
    CLEANER_CHECKPOINT_FILE,
    CleanerCheckpoint,
    read_checkpoint,
    write_checkpoint,
)
from ._compaction import CLEANED, step
from ._config import TopicConfig
from ._errors import LogClosedError, StorageError
from ._keys import batch_keys
from ._log import LogState, PartitionLog
from ._retain import Decide, read_batches, retained
from ._retention import largest_timestamp
from ._segment import LogSegment, segment_name

log = logging.getLogger("headrace.broker.cleaner")

DEFAULT_MAX_MAP_BYTES = 64 * 1024 * 1024
_ENTRY_OVERHEAD = 100  # a dict slot, an int and a bytes object's header, roughly
_MAX_RELATIVE_OFFSET = 2**31 - 1


@dataclass(frozen=True, slots=True)
class CleanStats:
    topic: str
    partition: int
    first_dirty_offset: int
    dirty_end_offset: int  # everything below it is now compacted
    bytes_before: int
    bytes_after: int
    records_dropped: int


@dataclass(frozen=True, slots=True)
class CleanPlan:
    segments: list[LogSegment]  # closed segments, oldest first
    dirty: list[LogSegment]  # the cleanable dirty section
    first_dirty_offset: int
    dirty_ratio: float
    checkpoint: CleanerCheckpoint


class _Aborted(Exception):
    """The log changed under the pass (closed, deleted, segments removed)."""


def plan(partition_log: PartitionLog, now_ms: int) -> CleanPlan | None:
    """What a pass over ``partition_log`` would clean now, or None if nothing is due."""
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
        elif config.min_compaction_lag_ms > 0 and largest_timestamp(segment) > young_after:
            break  # holds a record too young to compact; so may every later one
        else:
            dirty.append(segment)
    dirty_bytes = sum(segment.size for segment in dirty)
    if not dirty:
        return None
    ratio = dirty_bytes / max(clean_bytes + dirty_bytes, 1)
    oldest = dirty[0].roll_base_ms
    if oldest is None:
        oldest = largest_timestamp(dirty[0])
    overdue = now_ms - oldest > config.max_compaction_lag_ms
    if ratio < config.min_cleanable_dirty_ratio and not overdue:
        return None
    return CleanPlan(segments, dirty, first_dirty, ratio, checkpoint)


def clean_log(
    partition_log: PartitionLog,
    cleaning: CleanPlan,
    now_ms: int,
    *,
    max_map_bytes: int = DEFAULT_MAX_MAP_BYTES,
) -> CleanStats | None:
    """Run one pass (steps in the module docstring); None if it was aborted."""
    config = partition_log.config
    try:
        key_map = _key_map(partition_log, cleaning, max_map_bytes)
        latest, map_end = key_map.latest, key_map.end
        dropped = 0

        def decide(offset: int, key: bytes | None, has_value: bool) -> bool:
            nonlocal dropped
            keep = key is not None and latest.get(key, -1) <= offset and (
                has_value or _tombstone_kept(cleaning.checkpoint, offset, now_ms, config)
            )
            dropped += not keep
            return keep

        before = after = 0
        sources = [segment for segment in cleaning.segments if segment.base_offset < map_end]
        for group in _groups(sources, config.segment_bytes):
            cleaned = _write_group(partition_log, group, decide, key_map.last_batches)
            if not partition_log.replace_segments(group, cleaned):
                cleaned.close()
                cleaned.unlink()
                raise _Aborted
            before += sum(segment.size for segment in group)
            after += cleaned.size
        write_checkpoint(
            partition_log.directory / CLEANER_CHECKPOINT_FILE,
            cleaning.checkpoint.after_pass(map_end, now_ms, config.delete_retention_ms),
        )
    except (_Aborted, FileNotFoundError):
        return None
    except OSError:
        if partition_log.state is not LogState.OPEN:
            return None  # deleted under the pass: its directory is gone
        raise
    return CleanStats(
        partition_log.topic, partition_log.partition, cleaning.first_dirty_offset, map_end,
        before, after, dropped,
    )  # fmt: skip


def _tombstone_kept(
    checkpoint: CleanerCheckpoint, offset: int, now_ms: int, config: TopicConfig
) -> bool:
    # A tombstone survives the pass that first compacts it, and every pass until
    # delete.retention.ms after that one.
    cleaned_at = checkpoint.first_cleaned_at(offset)
    return cleaned_at is None or now_ms < cleaned_at + config.delete_retention_ms


@dataclass(slots=True)
class _KeyMap:
    latest: dict[bytes, int]  # key -> offset of its last record in the dirty section
    end: int  # the dirty section as far as the map covers it ends here
    last_batches: set[int]  # base offsets of each producer's last batch below ``end``


def _key_map(
    partition_log: PartitionLog, cleaning: CleanPlan, max_map_bytes: int
) -> _KeyMap:
    """Read the dirty section's keys, and every batch header below the map's end."""
    latest: dict[bytes, int] = {}
    last_of_producer: dict[int, int] = {}
    used = 0
    first_dirty = cleaning.first_dirty_offset
    end = first_dirty
    for segment in cleaning.segments:
        dirty = segment.next_offset > first_dirty
        for chunk, header in read_batches(segment.path, segment.size):
            if partition_log.state is not LogState.OPEN:
                raise _Aborted
            if header.producer_id >= 0:
                last_of_producer[header.producer_id] = header.base_offset
            if not dirty or header.is_control or header.is_transactional:
                continue  # kept whole, so they supersede nothing either
            for offset, key, _ in batch_keys(chunk, header):
                if key is None or offset < first_dirty:
                    continue
                if key not in latest:
                    used += len(key) + _ENTRY_OVERHEAD
                latest[key] = offset
        if dirty:
            end = segment.next_offset
            if used >= max_map_bytes or segment is cleaning.dirty[-1]:
                break
    return _KeyMap(latest, end, set(last_of_producer.values()))


def _groups(segments: list[LogSegment], max_bytes: int) -> list[list[LogSegment]]:
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


def _write_group(
    partition_log: PartitionLog, group: list[LogSegment], decide: Decide, keep: set[int]
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
                    raise _Aborted
                kept = retained(chunk, header, decide, keep_empty=header.base_offset in keep)
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


class Cleaner:
    """Cleans a broker's compacted logs, one pass at a time, dirtiest log first."""

    def __init__(self, *, max_map_bytes: int = DEFAULT_MAX_MAP_BYTES) -> None:
        self.max_map_bytes = max_map_bytes
        # One pass at a time: a second caller returns at once instead of waiting.
        self._running = threading.Lock()

    def run(self, logs: Iterable[PartitionLog], now_ms: int) -> list[CleanStats]:
        """Clean every log that is due; returns what each pass did."""
        if not self._running.acquire(blocking=False):
            return []
        try:
            due = [(found, each) for each in logs if (found := plan(each, now_ms)) is not None]
            due.sort(key=lambda item: item[0].dirty_ratio, reverse=True)
            done = []
            for _, each in due:
                fresh = plan(each, now_ms)  # an earlier pass took time: look again
                if fresh is None:
                    continue
                try:
                    stats = clean_log(each, fresh, now_ms, max_map_bytes=self.max_map_bytes)
                except StorageError:
                    # One damaged log must not stop the others from being cleaned.
                    log.exception("cannot clean %s", each)
                    continue
                if stats is not None:
                    done.append(stats)
            return done
        finally:
            self._running.release()
