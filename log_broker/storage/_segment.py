"""One log segment: a ``.log`` file of whole batches and its two sparse indexes.

A segment is named by its base offset (20 digits) and holds batches with offsets from
there up to the next segment's base. Data is written with ``pwrite`` at the end and read
with ``pread``; no Python object is made per record, and only index work is done per
batch. The owner (``PartitionLog``) serialises appends and decides when to roll.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from ..records import _batches as _records
from ._index import OffsetIndex, TimeIndex

_WALK_CHUNK = 16 * 1024
_RECOVERY_CHUNK = 8 * 1024 * 1024


QUARANTINE_SUFFIX = ".quarantine"


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class LogSegment:
    __slots__ = (
        "_bytes_since_index",
        "_index_interval",
        "_indexes_existed",
        "_max_timestamp_offset",
        "base_offset",
        "fd",
        "inode",
        "max_timestamp",
        "next_offset",
        "offset_index",
        "path",
        "roll_base_ms",
        "size",
        "time_index",
    )

    def __init__(
        self, directory: Path, base_offset: int, index_interval: int, suffix: str = ""
    ) -> None:
        """``suffix`` (e.g. ".cleaned") names the files of a segment that compaction is
        still writing or swapping in; a live segment has none."""
        self.base_offset = base_offset
        index_path, time_path = (
            directory / f"{segment_name(base_offset)}{kind}{suffix}"
            for kind in (".index", ".timeindex")
        )
        self.path = directory / f"{segment_name(base_offset)}.log{suffix}"
        # A missing index of an existing segment means rebuild, not "no entries".
        self._indexes_existed = index_path.exists() and time_path.exists()
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)  # umask decides
        try:
            # Names this very file in a recovery checkpoint: a segment deleted and made
            # again under the same name is another file.
            self.inode = os.fstat(self.fd).st_ino
            self.offset_index = OffsetIndex(index_path)
            self.time_index = TimeIndex(time_path)
        except OSError:
            os.close(self.fd)
            raise
        self._index_interval = index_interval
        self.size = 0
        self.next_offset = base_offset  # one past the last offset held
        self.max_timestamp = -1
        self._max_timestamp_offset = base_offset  # base offset of the batch that set it
        self._bytes_since_index = 0
        # When this segment started to age, for segment.ms: the first append's clock, or
        # on reopen the first batch's timestamp (None until known).
        self.roll_base_ms: int | None = None

    # ------------------------------------------------------------------ writing

    def track(self, header_base: int, position: int, size: int, max_timestamp: int) -> None:
        """Account for a batch at ``position``: indexes, largest timestamp, end offset.

        ``header_base`` is the batch's assigned base offset; ``next_offset`` must be set by
        the caller when it knows the last offset (``track`` keeps it at least past base).
        """
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self._max_timestamp_offset = header_base
        if self._bytes_since_index > self._index_interval:
            self.offset_index.append(header_base - self.base_offset, position)
            self.time_index.maybe_append(
                self.max_timestamp, self._max_timestamp_offset - self.base_offset
            )
            self._bytes_since_index = 0
        self._bytes_since_index += size

    def write(self, payload: bytes | bytearray | memoryview) -> None:
        """Append bytes at the end of the file (index entries follow via ``track``)."""
        view = memoryview(payload)
        written = 0
        while written < len(view):
            written += os.pwrite(self.fd, view[written:], self.size + written)
        self.size += written

    def write_indexes(self) -> None:
        self.offset_index.write_pending()
        self.time_index.write_pending()

    def mark(self) -> tuple[int, ...]:
        """What ``rollback`` restores: the segment as it is before an append."""
        return (
            self.size,
            self.next_offset,
            self.max_timestamp,
            self._max_timestamp_offset,
            self._bytes_since_index,
            len(self.offset_index),
            len(self.time_index),
        )

    def rollback(self, mark: tuple[int, ...]) -> None:
        """Forget everything appended since ``mark`` was taken, in memory first (so the
        bytes are unreadable and the next append overwrites them even if the files
        cannot be cut), then in the files."""
        (
            self.size,
            self.next_offset,
            self.max_timestamp,
            self._max_timestamp_offset,
            self._bytes_since_index,
            offset_entries,
            time_entries,
        ) = mark
        # Each step on its own: a file that cannot be cut must not stop the others.
        with contextlib.suppress(OSError):
            self.offset_index.discard_after(offset_entries)
        with contextlib.suppress(OSError):
            self.time_index.discard_after(time_entries)
        os.ftruncate(self.fd, self.size)

    def seal(self) -> None:
        """Record the final largest timestamp, so a reopen and retention see it without
        a scan. Called when the segment stops being active and on close."""
        self.time_index.maybe_append(
            self.max_timestamp, self._max_timestamp_offset - self.base_offset
        )
        self.time_index.write_pending()
        self.offset_index.write_pending()

    def set_index_interval(self, index_interval: int) -> None:
        self._index_interval = index_interval

    # ------------------------------------------------------------------ reading

    def walk(self, position: int, stop: int | None = None) -> Iterator[_records.BatchHeader]:
        """Headers of the batches from ``position`` (a batch start) up to ``stop``,
        read in chunks; the batches themselves are not read or checked."""
        stop = self.size if stop is None else min(stop, self.size)
        header_size = _records.HEADER_SIZE
        chunk = b""
        chunk_at = position
        while position + header_size <= stop:
            at = position - chunk_at
            if at + header_size > len(chunk):
                want = max(min(_WALK_CHUNK, stop - position), header_size)
                chunk = os.pread(self.fd, want, position)
                chunk_at, at = position, 0
                if len(chunk) < header_size:
                    return
            header = _records.read_header(chunk, at, position)
            if header.magic != 2 or header.size < _records.HEADER_SIZE:
                return  # not a batch boundary: a damaged file or a stale index entry
            yield header
            position += header.size

    def find_position(self, offset: int) -> tuple[int, _records.BatchHeader | None]:
        """Start of the first batch whose last offset is at or after ``offset``, and its
        header (None and the segment size if there is none)."""
        start = self.offset_index.lookup(offset - self.base_offset)
        for header in self.walk(start):
            if header.base_offset + header.last_offset_delta >= offset:
                return header.position, header
        return self.size, None

    def read(self, offset: int, max_bytes: int, upper_bound: int | None) -> bytes:
        """Whole batches from the one holding ``offset``: at most ``max_bytes`` unless
        the first batch alone is larger, none whose base offset is ``upper_bound`` or more.
        One pread of what ``locate`` finds."""
        start, end = self.locate(offset, max_bytes, upper_bound)
        return os.pread(self.fd, end - start, start) if end > start else b""

    def locate(self, offset: int, max_bytes: int, upper_bound: int | None) -> tuple[int, int]:
        """The file positions (start, end) of what ``read`` returns, without reading it:
        a fetch learns its size before it reserves memory for it.

        Steps: index lookup and a short walk find the start; if everything to the end of
        the segment fits both limits the end is the segment size (no walk); otherwise the
        index gives a batch boundary near the limit and a short walk finds the last batch
        that fits.
        """
        start, first = self.find_position(offset)
        if first is None or (upper_bound is not None and first.base_offset >= upper_bound):
            return start, start
        limit = start + max_bytes
        if limit >= self.size and (upper_bound is None or upper_bound >= self.next_offset):
            end = self.size
        else:
            bound = self.next_offset if upper_bound is None else upper_bound
            end = max(start, self.offset_index.boundary_before(limit, bound - self.base_offset))
            for header in self.walk(end, limit):
                if header.position + header.size > limit or (
                    upper_bound is not None and header.base_offset >= upper_bound
                ):
                    break
                end = header.position + header.size
            if end == start:  # KIP-74: the first batch goes out even if it is too big
                end = start + first.size
        return start, end

    def find_timestamp(self, timestamp: int, min_offset: int) -> tuple[int, int] | None:
        """First record at or after ``min_offset`` with a timestamp at or after
        ``timestamp``, as (offset, timestamp). The time index picks where to start, batch
        maxTimestamps skip whole batches, and only the batch that qualifies is decoded."""
        if self.max_timestamp < timestamp or self.next_offset <= min_offset:
            return None
        start_offset = max(self.base_offset + self.time_index.lookup(timestamp), min_offset)
        start, _ = self.find_position(start_offset)
        for header in self.walk(start):
            if header.max_timestamp < timestamp or header.last_offset < min_offset:
                continue
            if header.timestamp_type is _records.TimestampType.LOG_APPEND_TIME:
                return max(header.base_offset, min_offset), header.max_timestamp
            batch = os.pread(self.fd, header.size, header.position)
            for record in _records.decode_records(batch, replace(header, position=0)):
                if record.offset >= min_offset and record.timestamp >= timestamp:
                    return record.offset, record.timestamp
        return None

    # ------------------------------------------------------------------ opening

    def load(self) -> bool:
        """Open after a clean shutdown: trust the files, read the indexes, and walk only
        the batches after the last index entry to learn the end offset and timestamps.
        False if an index is damaged or disagrees with the data (rebuild instead)."""
        self.size = os.fstat(self.fd).st_size
        if self.size and not self._indexes_existed:
            return False
        return self._load_indexes()

    def _load_indexes(self) -> bool:
        """``load`` for the first ``self.size`` bytes of the file (index entries beyond
        them are dropped)."""
        if not self.offset_index.load(self.size):
            return False
        last_offset, start = self.offset_index.last() or (0, 0)
        end = start
        for header in self.walk(start):
            if (
                header.position == start
                and start
                and (header.base_offset != self.base_offset + last_offset)
            ):
                return False  # the entry does not point at the batch it names
            if header.position - start > self._index_interval:
                return False  # this batch should have had an entry: index incomplete
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp = header.max_timestamp
                self._max_timestamp_offset = header.base_offset
            self.next_offset = header.last_offset + 1
            end = header.position + header.size
        if end != self.size:
            return False
        self._bytes_since_index = self.size - start
        if not self.time_index.load(self.next_offset - self.base_offset):
            return False
        last_time = self.time_index.last()
        if last_time and last_time[0] > self.max_timestamp:
            self.max_timestamp, relative = last_time
            self._max_timestamp_offset = self.base_offset + relative
        first = next(self.walk(0), None)
        if first is not None and first.max_timestamp >= 0:
            self.roll_base_ms = first.max_timestamp
        return True

    def load_synced_prefix(self, synced: int) -> tuple[int, int] | None:
        """Recover a segment whose first ``synced`` bytes were fsynced (a recovery
        checkpoint says so): load the indexes for that prefix as ``load`` does, without
        reading its batches again, then rebuild the rest (``rebuild``'s scan, CRCs
        checked) from there. Returns the bytes cut off the tail and the offset the
        prefix ends at, or None if the prefix does not check out (the caller rebuilds
        the whole segment).

        The indexes of an active segment are not fsynced; after a crash that lost some
        of their entries, or left garbage, ``load``'s checks fail and this returns None.
        """
        file_size = os.fstat(self.fd).st_size
        if synced < 0 or synced > file_size or not self._indexes_existed:
            return None
        self.size = synced
        if not self._load_indexes():
            return None
        prefix_end = self.next_offset
        return self._scan_from(synced, verify=True), prefix_end

    def rebuild(self, *, verify: bool) -> int:
        """Rebuild both indexes from the data, checking CRCs if ``verify``; cut the file at
        the end of the last valid batch. Returns the number of bytes cut off.

        Steps: drop all index entries; scan the file in chunks with ``scan_batches``
        (which stops at a torn, corrupt or out-of-order batch); track every good batch as
        an append would; truncate data after the last good batch; write the indexes.
        """
        self.offset_index.truncate_to(0)
        self.time_index.truncate_to(0)
        self.size = 0
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self._max_timestamp_offset = self.base_offset
        self._bytes_since_index = 0
        self.roll_base_ms = None
        return self._scan_from(0, verify=verify)

    def _scan_from(self, position: int, *, verify: bool) -> int:
        """Track the batches from ``position`` (a batch start, everything before it
        already tracked) to the end of the file; cut the file after the last good one."""
        file_size = os.fstat(self.fd).st_size
        want = _RECOVERY_CHUNK
        while position < file_size:
            chunk = os.pread(self.fd, want, position)
            scan = _records.scan_batches(chunk, verify_crc=verify)
            good_end = 0
            for header in scan:
                if header.base_offset < self.next_offset:
                    break  # offsets went backwards: not data this log wrote here
                if self.roll_base_ms is None and header.max_timestamp >= 0:
                    self.roll_base_ms = header.max_timestamp
                self.track(
                    header.base_offset,
                    position + header.position,
                    header.size,
                    header.max_timestamp,
                )
                self.next_offset = header.last_offset + 1
                good_end = header.position + header.size
            position += good_end
            if good_end == len(chunk):
                want = _RECOVERY_CHUNK
                continue
            stopped_by_chunk = scan.incomplete and good_end == scan.end
            if not stopped_by_chunk or position + (len(chunk) - good_end) >= file_size:
                break
            # A batch straddles the chunk's end: read again from its start, big enough.
            tail = chunk[good_end:]
            needed = _records.read_header(tail, 0).size if len(tail) >= _records.HEADER_SIZE else 0
            want = max(_RECOVERY_CHUNK, needed)
        self.size = position
        if position < file_size:
            self._quarantine(position, file_size)
            os.ftruncate(self.fd, position)
        self.seal()
        return file_size - position

    @property
    def quarantine_path(self) -> Path:
        """Where ``rebuild`` keeps the bytes it cuts off (never read as a segment)."""
        return self.path.with_name(self.path.name + QUARANTINE_SUFFIX)

    def _quarantine(self, start: int, end: int) -> None:
        # Copy the cut bytes aside before cutting: they may hold acknowledged records
        # behind one damaged batch, which an operator may want to salvage.
        with open(self.quarantine_path, "ab") as out:
            position = start
            while position < end:
                chunk = os.pread(self.fd, min(_RECOVERY_CHUNK, end - position), position)
                if not chunk:
                    break
                out.write(chunk)
                position += len(chunk)
            out.flush()
            os.fsync(out.fileno())

    # ------------------------------------------------------------------ lifetime

    def fsync(self) -> None:
        os.fsync(self.fd)
        self.offset_index.fsync()
        self.time_index.fsync()

    def fsync_ops(self) -> list[tuple[int, bool]]:
        """What ``fsync`` syncs, as ``(fd, datasync)`` ops for ``_fsyncs.sync_files``."""
        return [(self.fd, False), (self.offset_index.fd, False), (self.time_index.fd, False)]

    def fsync_data(self) -> None:
        """The log file alone (its bytes and size), not its indexes."""
        os.fdatasync(self.fd)

    def close(self) -> None:
        self.offset_index.close()
        self.time_index.close()
        os.close(self.fd)

    def files(self) -> tuple[Path, Path, Path]:
        """The index files, then the log file: renaming in this order makes the log
        file's rename the last step."""
        return self.offset_index.path, self.time_index.path, self.path

    def rename(self, old_suffix: str, new_suffix: str) -> None:
        """Change the suffix of the three files (open descriptors stay valid)."""
        for path in self.files():
            os.replace(path, _with_suffix(path, old_suffix, new_suffix))
        self.offset_index.path = _with_suffix(self.offset_index.path, old_suffix, new_suffix)
        self.time_index.path = _with_suffix(self.time_index.path, old_suffix, new_suffix)
        self.path = _with_suffix(self.path, old_suffix, new_suffix)

    def unlink(self) -> None:
        for path in self.files():
            path.unlink(missing_ok=True)


def _with_suffix(path: Path, old_suffix: str, new_suffix: str) -> Path:
    name = path.name
    if old_suffix and not name.endswith(old_suffix):
        raise ValueError(f"{path} does not end with {old_suffix!r}")
    return path.with_name(name[: len(name) - len(old_suffix)] + new_suffix)


def remove_segment_files(directory: Path, base_offset: int) -> None:
    for suffix in (".log", ".index", ".timeindex"):
        (directory / f"{segment_name(base_offset)}{suffix}").unlink(missing_ok=True)
