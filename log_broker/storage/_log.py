"""One partition's log: a directory of segments, appended to and read as opaque bytes.

Layout of ``<data_dir>/<topic>-<partition>/``::

    00000000000000000000.log         batches, exactly as produced but with offsets set
    00000000000000000000.index       sparse offset index
    00000000000000000000.timeindex   sparse time index
    (checkpoints and the clean-shutdown marker: see ``_recovery``)

Threads: the event loop appends and reads; ``sync`` runs in a worker thread; retention
and compaction may run in others. One lock guards the segment list and offsets (held
for an append or a read, briefly by sync, retention and the swap of a cleaned segment);
a second lock keeps syncs of one log in order.
A file that a running sync may still fsync is closed only when that sync ends.
"""

from __future__ import annotations

import contextlib
import enum
import os
import shutil
import threading
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

from headrace.base import check_transition, fsync_dir, transition_table, write_atomically

from ..records import InvalidRecordError
from ..records import _batches as _records
from ..records._compression import DEFAULT_INFLATE_LIMIT
from ..records._validation import BatchRules, validate_batches
from ._checkpoint import write_offset
from ._compaction import install
from ._config import TopicConfig
from ._errors import (
    KafkaStorageError,
    LogClosedError,
    OffsetOutOfRangeError,
)
from ._faults import storage_fault
from ._recovery import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_FILE,
    RECOVERY_POINT_FILE,
    recover_segments,
)
from ._retention import expired_prefix
from ._segment import LogSegment
from ._synced_checkpoint import SyncedPosition

_MAX_RELATIVE_OFFSET = 2**31 - 1  # index entries hold offsets relative to the segment


@dataclass(slots=True)
class SyncPlan:
    """One sync of a log between ``begin_sync`` and ``finish_sync``."""

    target: int  # the end offset the sync makes durable
    dirty: set[LogSegment]  # taken from the log: put back if the sync fails
    whole: set[LogSegment]  # segments synced with their indexes
    dir_dirty: bool
    active_base: int
    synced: SyncedPosition
    ops: list[tuple[int, bool]]  # (fd, datasync): the files to flush, in order


@dataclass(frozen=True, slots=True)
class LocatedBytes:
    """Whole batches in one segment file: ``size`` bytes from ``position``."""

    segment: LogSegment
    position: int
    size: int


class LogState(enum.Enum):
    OPEN = "open"
    CLOSED = "closed"
    DELETED = "deleted"


# A log closed or deleted under a request is a race the client retries, not a bug: the
# lifecycle raises the retriable LogClosedError.
_TRANSITIONS = transition_table(
    {
        LogState.OPEN: {LogState.CLOSED, LogState.DELETED},
        LogState.CLOSED: {LogState.DELETED},
        LogState.DELETED: set(),
    }
)


@dataclass(frozen=True, slots=True)
class AppendResult:
    base_offset: int
    last_offset: int
    log_append_time_ms: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    max_timestamp: int


class PartitionLog:
    """Append-only log of one topic partition. Open with ``PartitionLog.open``."""

    def __init__(
        self,
        directory: Path,
        topic: str,
        partition: int,
        config: TopicConfig,
        segments: list[LogSegment],
        log_start_offset: int,
        recovery_base: int | None,
    ) -> None:
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self._config = config
        self._segments = segments
        self._bases = [segment.base_offset for segment in segments]
        self._log_start_offset = log_start_offset
        self._log_end_offset = segments[-1].next_offset
        self._flushed_offset = self._log_end_offset
        self._size = sum(segment.size for segment in segments)
        self._recovery_base = recovery_base
        self._state = LogState.OPEN
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._checkpoint_lock = threading.Lock()
        self._dirty: set[LogSegment] = set()  # written since the last sync began
        # Segments whose data was synced but not their indexes: the active one, whose
        # indexes recovery rebuilds from the data after a crash anyway (``_recovery``).
        self._indexes_unsynced: set[LogSegment] = set()
        self._dir_dirty = False  # segment files created since the last sync began
        self._syncing = False
        self._close_after_sync: list[LogSegment] = []
        # How much of the active segment the last sync made durable (everything at open).
        active = segments[-1]
        self._synced = SyncedPosition(active.base_offset, active.inode, active.size)

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        path: Path,
        topic: str,
        partition: int,
        config: TopicConfig,
        synced: SyncedPosition | None = None,
    ) -> PartitionLog:
        """Open (or create) the log in directory ``path`` (the partition's own
        directory), recovering it if needed; ``synced`` is what a recovery checkpoint
        says of its active segment (``_synced_checkpoint``).

        Steps: recover the segments (see ``recover_segments``); move the recovery point
        to the active segment; only then remove the clean-shutdown marker.
        """
        recovered = recover_segments(path, config.index_interval_bytes, synced)
        log = cls(
            path,
            topic,
            partition,
            config,
            recovered.segments,
            recovered.log_start_offset,
            recovered.recovery_base,
        )
        if recovered.flushed_offset is not None and synced is not None:
            log._await_first_sync(recovered.flushed_offset, synced)
        # Everything is on disk now: recovery may start at the active segment next time.
        log._write_recovery_point(recovered.segments[-1].base_offset)
        if recovered.clean:
            # Only now: a crash before this point must find the marker and load again.
            (path / CLEAN_SHUTDOWN_FILE).unlink()
            fsync_dir(path)
        return log

    def _await_first_sync(self, flushed_offset: int, synced: SyncedPosition) -> None:
        """Recovery left bytes after the active segment's synced prefix unsynced: the
        log counts as flushed only to there until its next sync."""
        self._flushed_offset = flushed_offset
        self._synced = synced
        self._dirty.add(self._segments[-1])
        self._indexes_unsynced.add(self._segments[-1])

    # ------------------------------------------------------------------ properties

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def flushed_offset(self) -> int:
        return self._flushed_offset

    @property
    def synced_position(self) -> SyncedPosition:
        """How much of the active segment is known to be on disk (for checkpoints)."""
        return self._synced

    @property
    def size_bytes(self) -> int:
        return self._size

    @property
    def config(self) -> TopicConfig:
        return self._config

    @property
    def state(self) -> LogState:
        return self._state

    def segment_base_offsets(self) -> list[int]:
        with self._lock:
            return list(self._bases)

    def update_config(self, config: TopicConfig) -> None:
        """Apply a changed topic config; it governs appends and retention from now on."""
        with self._lock:
            self._config = config
            for segment in self._segments:
                segment.set_index_interval(config.index_interval_bytes)

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.topic}-{self.partition}, start={self._log_start_offset}, "
            f"end={self._log_end_offset}, {self._state.value})"
        )

    # ------------------------------------------------------------------ appending

    def append(
        self, payload: bytearray, *, now_ms: int, allow_control: bool = False
    ) -> AppendResult:
        """Validate a produce payload, assign offsets and append it; all or nothing.

        Steps: parse and check every batch, down to each record
        (``_batch_validation``); roll the active segment
        if the payload would overflow it or it is too old; patch each batch's base
        offset (and stamp LogAppendTime if the topic asks for it); write the payload
        with one pwrite; index the batches; publish the new end offset. Nothing is
        fsynced here.
        """
        headers = _records.parse_batches(payload)
        if not headers:
            raise InvalidRecordError("produce payload holds no record batches")
        config = self._config
        validate_batches(
            payload,
            headers,
            BatchRules(
                max_message_bytes=config.max_message_bytes,
                require_keys=config.compact,
                allow_control=allow_control,
                inflate_limit=DEFAULT_INFLATE_LIMIT,
            ),
        )
        count = sum(header.last_offset_delta + 1 for header in headers)
        log_append = config.log_append_time
        with self._lock:
            if self._state is not LogState.OPEN:
                raise LogClosedError(f"{self!r} is not open")
            first_offset = self._log_end_offset
            try:
                segment = self._segment_for(len(payload), first_offset + count, now_ms)
            except OSError as exc:
                raise storage_fault(exc, "roll a segment in", self.directory) from exc
            start = segment.size
            next_offset = first_offset
            max_timestamp = -1
            for header in headers:
                _records.patch_base_offset(payload, header.position, next_offset)
                timestamp = header.max_timestamp
                if log_append:
                    _records.set_log_append_time(payload, header.position, now_ms)
                    timestamp = now_ms
                max_timestamp = max(max_timestamp, timestamp)
                next_offset += header.last_offset_delta + 1
            # All or nothing: data and index entries are written before anything is
            # published; if either write fails, both are cut back, so an error answer
            # never leaves a record behind that a retry would duplicate.
            mark = segment.mark()
            try:
                segment.write(payload)
                offset = first_offset
                for header in headers:
                    segment.track(
                        offset,
                        start + header.position,
                        header.size,
                        now_ms if log_append else header.max_timestamp,
                    )
                    offset += header.last_offset_delta + 1
                segment.write_indexes()
            except OSError as exc:
                with contextlib.suppress(OSError):
                    segment.rollback(mark)
                raise storage_fault(exc, "append to", segment.path) from exc
            segment.next_offset = next_offset
            if segment.roll_base_ms is None:
                segment.roll_base_ms = now_ms
            self._dirty.add(segment)
            self._size += len(payload)
            self._log_end_offset = next_offset
            return AppendResult(
                first_offset,
                next_offset - 1,
                now_ms if log_append else -1,
                self._log_start_offset,
                max_timestamp,
            )

    def _segment_for(self, size: int, end_offset: int, now_ms: int) -> LogSegment:
        """The segment to append to: the active one, or a new one if it is full or old."""
        active = self._segments[-1]
        if active.size == 0:
            return active
        config = self._config
        if not (
            active.size + size > config.segment_bytes
            or (
                active.roll_base_ms is not None
                and now_ms - active.roll_base_ms > config.segment_ms - config.segment_jitter_ms
            )
            or len(active.offset_index) >= config.segment_index_bytes // 8
            or end_offset - active.base_offset > _MAX_RELATIVE_OFFSET
        ):
            return active
        active.seal()
        segment = LogSegment(self.directory, self._log_end_offset, config.index_interval_bytes)
        self._segments.append(segment)
        self._bases.append(segment.base_offset)
        self._dir_dirty = True
        return segment

    def roll(self, now_ms: int) -> None:
        """Start a new segment now (if the active one holds anything)."""
        with self._lock:
            self._check_open()
            self._segment_for(self._config.segment_bytes, self._log_end_offset, now_ms)

    # ------------------------------------------------------------------ reading

    def read(self, offset: int, max_bytes: int, *, upper_bound: int | None = None) -> bytes:
        """Whole batches from the one holding ``offset``, within one segment.

        At most ``max_bytes``, except that the first batch is returned whole even when
        larger (KIP-74); no batch whose base offset is ``upper_bound`` or more. Returns
        b"" at the log end offset; raises ``OffsetOutOfRangeError`` outside
        [log_start_offset, log_end_offset].
        """
        with self._lock:
            self._check_open()
            end = self._log_end_offset
            if offset < self._log_start_offset or offset > end:
                raise OffsetOutOfRangeError(offset, self._log_start_offset, end)
            if offset == end or (upper_bound is not None and offset >= upper_bound):
                return b""
            segments = self._segments
            for i in range(bisect_right(self._bases, offset) - 1, len(segments)):
                segment = segments[i]
                # A segment that compaction emptied holds no batch to start from.
                if offset < segment.next_offset and segment.size:
                    return segment.read(max(offset, segment.base_offset), max_bytes, upper_bound)
            return b""

    def locate(
        self, offset: int, max_bytes: int, *, upper_bound: int | None = None
    ) -> LocatedBytes | None:
        """Where the bytes ``read`` would return lie, without reading them (None for
        none); ``read_located`` reads them. Raises as ``read`` does."""
        with self._lock:
            self._check_open()
            end = self._log_end_offset
            if offset < self._log_start_offset or offset > end:
                raise OffsetOutOfRangeError(offset, self._log_start_offset, end)
            if offset == end or (upper_bound is not None and offset >= upper_bound):
                return None
            segments = self._segments
            for i in range(bisect_right(self._bases, offset) - 1, len(segments)):
                segment = segments[i]
                if offset < segment.next_offset and segment.size:
                    start, stop = segment.locate(
                        max(offset, segment.base_offset), max_bytes, upper_bound
                    )
                    return LocatedBytes(segment, start, stop - start) if stop > start else None
            return None

    def read_located(self, located: LocatedBytes) -> bytes:
        """The bytes ``locate`` found; b"" if retention or compaction has since removed
        or replaced their segment (the client fetches again from the same offset)."""
        with self._lock:
            self._check_open()
            segment = located.segment
            i = bisect_right(self._bases, segment.base_offset) - 1
            if i < 0 or self._segments[i] is not segment:
                return b""
            return os.pread(segment.fd, located.size, located.position)

    def batch_headers(
        self, offset: int, limit: int, *, upper_bound: int
    ) -> list[_records.BatchHeader]:
        """Headers of up to ``limit`` batches from the one holding ``offset``, none whose
        base offset is ``upper_bound`` or more, read without the batches themselves: a
        replay that needs only headers (producer state) reads a few KB per batch, not
        the whole log. Positions in them are within their segment files."""
        with self._lock:
            self._check_open()
            found: list[_records.BatchHeader] = []
            segments = self._segments
            for i in range(max(0, bisect_right(self._bases, offset) - 1), len(segments)):
                segment = segments[i]
                if offset >= segment.next_offset or not segment.size:
                    continue
                start, _ = segment.find_position(max(offset, segment.base_offset))
                for header in segment.walk(start):
                    if header.base_offset >= upper_bound or len(found) >= limit:
                        return found
                    found.append(header)
            return found

    def offset_for_timestamp(self, ts_ms: int) -> tuple[int, int] | None:
        """The earliest (offset, timestamp) with timestamp >= ``ts_ms``, or None."""
        with self._lock:
            self._check_open()
            for segment in self._segments:
                found = segment.find_timestamp(ts_ms, self._log_start_offset)
                if found is not None:
                    return found
            return None

    def max_timestamp(self) -> int:
        """The largest timestamp of any batch in the log, -1 when it holds none: what
        ListOffsets' MAX_TIMESTAMP looks up, as Kafka does, from each segment's largest."""
        with self._lock:
            self._check_open()
            return max((segment.max_timestamp for segment in self._segments), default=-1)

    # ------------------------------------------------------------------ deleting

    def delete_records_before(self, offset: int) -> int:
        """Make ``offset`` the log start (if later than it is), delete segments wholly
        below it, and persist it. Returns the log start offset."""
        with self._lock:
            self._check_open()
            if offset > self._log_end_offset:
                raise OffsetOutOfRangeError(offset, self._log_start_offset, self._log_end_offset)
            moved = offset > self._log_start_offset
            if moved:
                self._log_start_offset = offset
                self._remove_front(self._count_below_start())
        if moved:
            self._persist_log_start()
        return self._log_start_offset

    def apply_retention(self, now_ms: int) -> int:
        """Delete the oldest closed segments past retention.ms (by their largest
        timestamp) or beyond retention.bytes; -1 means unlimited. The active segment
        stays. Returns how many segments were removed."""
        with self._lock:
            self._check_open()
            count = max(
                self._count_below_start(),
                expired_prefix(self._segments[:-1], self._size, self._config, now_ms),
            )
            moved = False
            if count:
                self._remove_front(count)
                if self._bases[0] > self._log_start_offset:
                    self._log_start_offset = self._bases[0]
                    moved = True
        if moved:
            self._persist_log_start()
        return count

    def _persist_log_start(self) -> None:
        # Outside the main lock: an fsync must not stall appends. The checkpoint lock
        # keeps two writers from sharing the temporary file; each writes the latest value.
        with self._checkpoint_lock:
            write_offset(self.directory / LOG_START_FILE, self._log_start_offset)

    def _count_below_start(self) -> int:
        # Closed segments whose successor starts at or below the log start hold nothing
        # readable any more.
        return max(bisect_right(self._bases, self._log_start_offset) - 1, 0)

    def _remove_front(self, count: int) -> None:
        count = min(count, len(self._segments) - 1)  # never the active segment
        for segment in self._segments[:count]:
            self._size -= segment.size
            self._dirty.discard(segment)
            self._indexes_unsynced.discard(segment)
            segment.unlink()
            if self._syncing:
                self._close_after_sync.append(segment)
            else:
                segment.close()
        del self._segments[:count]
        del self._bases[:count]

    # ------------------------------------------------------------------ compaction

    def closed_segments(self) -> list[LogSegment]:
        """The segments before the active one: what the cleaner may rewrite. Their
        files no longer change, so the cleaner reads them without the lock."""
        with self._lock:
            self._check_open()
            return self._segments[:-1]

    def replace_segments(self, sources: list[LogSegment], cleaned: LogSegment) -> bool:
        """Swap ``cleaned`` (written and fsynced under the ``.cleaned`` suffix) in for
        the consecutive closed segments ``sources``; the only step of compaction that
        holds the lock. False, with nothing changed, if the log closed or retention
        removed any of ``sources`` meanwhile (the caller deletes ``cleaned``).

        Steps: check ``sources`` are still consecutive closed segments; run the file
        protocol (``_compaction.install``); put ``cleaned`` in their place; close the
        sources' files (after a running sync, which may still fsync them).
        """
        with self._lock:
            if self._state is not LogState.OPEN or not sources:
                return False
            first = next((i for i, s in enumerate(self._segments) if s is sources[0]), None)
            if first is None or first + len(sources) >= len(self._segments):
                return False
            if any(a is not b for a, b in zip(self._segments[first:], sources, strict=False)):
                return False
            try:
                install(cleaned, sources)
            except OSError as exc:
                # The sources' open files still read correctly; a restart finishes or
                # undoes whatever the rename steps left behind.
                raise KafkaStorageError(
                    f"cannot swap a cleaned segment into {self!r}: {exc}"
                ) from exc
            self._segments[first : first + len(sources)] = [cleaned]
            self._bases[first : first + len(sources)] = [cleaned.base_offset]
            self._size += cleaned.size - sum(source.size for source in sources)
            for source in sources:
                self._dirty.discard(source)
                self._indexes_unsynced.discard(source)
                if self._syncing:
                    self._close_after_sync.append(source)
                else:
                    source.close()
            return True

    # ------------------------------------------------------------------ durability

    def sync(self) -> None:
        """Fsync everything appended before the call; safe from a worker thread.

        Steps: under the lock, note the end offset and take the set of segments written
        since the last sync (appends after this point mark them again); sync those
        files and, if segments were created, the directory; move the recovery point up
        to the active segment; finally advance ``flushed_offset`` to the noted end.

        The active segment gets its data synced and not its indexes: after a crash,
        recovery rebuilds every segment from the recovery point on from its data, so
        the indexes of the segment the recovery point names need not be on disk. Once
        a segment is no longer active its indexes are synced with it, before the
        recovery point moves past it. That is one fsync per acknowledged produce
        instead of three, which is most of what a produce waits for on a quick disk.

        The same in two halves, for a caller that syncs many logs' files together (the
        group syncer): ``begin_sync``, the plan's ``ops`` synced, ``finish_sync``.
        """
        plan = self.begin_sync()
        if plan is None:
            return
        error: BaseException | None = None
        try:
            for fd, datasync in plan.ops:
                (os.fdatasync if datasync else os.fsync)(fd)
        except BaseException as exc:
            error = exc
        self.finish_sync(plan, error)

    def begin_sync(self) -> SyncPlan | None:
        """The files a sync must flush, as ``(fd, datasync)`` ops, or None if the log is
        closed. Holds the log's sync lock until ``finish_sync``, which must follow, and
        keeps the files open (segments closed meanwhile are closed after it)."""
        self._sync_lock.acquire()
        try:
            with self._lock:
                if self._state is not LogState.OPEN:
                    self._sync_lock.release()
                    return None  # closing synced everything; deleting made it moot
                active = self._segments[-1]
                dirty, self._dirty = self._dirty, set()
                whole = (dirty | self._indexes_unsynced) - {active}
                data_only = active in dirty
                plan = SyncPlan(
                    target=self._log_end_offset,
                    dirty=dirty,
                    whole=whole,
                    dir_dirty=self._dir_dirty,
                    active_base=active.base_offset,
                    synced=SyncedPosition(active.base_offset, active.inode, active.size),
                    ops=[op for segment in whole for op in segment.fsync_ops()]
                    + ([(active.fd, True)] if data_only else []),
                )
                self._dir_dirty = False
                self._indexes_unsynced = (
                    {active} if data_only or active in self._indexes_unsynced else set()
                )
                self._syncing = True
        except BaseException:
            self._sync_lock.release()
            raise
        return plan

    def finish_sync(self, plan: SyncPlan, error: BaseException | None) -> None:
        """End a sync ``begin_sync`` began, its ops synced with ``error`` the first
        failure (None: all done): sync the directory and write the recovery point if
        due, then advance ``flushed_offset``. A failure leaves the files to the next
        sync and raises (an ``OSError`` as ``storage_fault``'s ``KafkaStorageError``)."""
        try:
            try:
                if error is not None:
                    raise error
                if plan.dir_dirty:
                    fsync_dir(self.directory)
                self._write_recovery_point(plan.active_base)
            except BaseException as exc:
                with self._lock:
                    self._dirty |= plan.dirty
                    self._indexes_unsynced |= plan.whole
                    self._dir_dirty |= plan.dir_dirty
                if isinstance(exc, OSError):
                    raise storage_fault(exc, "fsync", self.directory) from exc
                raise
            finally:
                with self._lock:
                    self._syncing = False
                    for segment in self._close_after_sync:
                        segment.close()
                    self._close_after_sync.clear()
            with self._lock:
                self._flushed_offset = max(self._flushed_offset, plan.target)
                self._synced = plan.synced
        finally:
            self._sync_lock.release()

    def _write_recovery_point(self, base_offset: int) -> None:
        with self._checkpoint_lock:
            if base_offset != self._recovery_base:
                write_offset(self.directory / RECOVERY_POINT_FILE, base_offset)
                self._recovery_base = base_offset

    # ------------------------------------------------------------------ lifetime

    def _check_open(self) -> None:
        if self._state is not LogState.OPEN:
            raise LogClosedError(f"{self!r} is not open")

    def _transition(self, new: LogState) -> None:
        check_transition(_TRANSITIONS, self._state, new, repr(self), LogClosedError)
        self._state = new

    def close(self) -> None:
        """Fsync everything, close the files and leave the clean-shutdown marker, which
        lets the next open skip recovery. Closing twice is harmless."""
        with self._sync_lock, self._lock:
            if self._state is not LogState.OPEN:
                return
            self._transition(LogState.CLOSED)
            active = self._segments[-1]
            active.seal()
            # The others were synced already, indexes and all.
            for segment in self._dirty | self._indexes_unsynced | {active}:
                segment.fsync()
            for segment in self._segments:
                segment.close()
            fsync_dir(self.directory)
            write_atomically(self.directory / CLEAN_SHUTDOWN_FILE, b"")
            self._flushed_offset = self._log_end_offset

    def delete(self) -> None:
        """Close the files and remove the log's directory with everything in it."""
        with self._sync_lock, self._lock:
            if self._state is LogState.DELETED:
                return
            if self._state is LogState.OPEN:
                for segment in self._segments:
                    segment.close()
            self._transition(LogState.DELETED)
            shutil.rmtree(self.directory, ignore_errors=True)
