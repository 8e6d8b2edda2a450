"""Bringing a partition directory back to a consistent set of segments on open.

Files a log keeps beside its segments::

    log-start-offset.checkpoint   log start moved by DeleteRecords or retention
    recovery-point.checkpoint     base offset of the first segment that may hold bytes
                                  not yet fsynced (moved up by every sync)
    .clean-shutdown               present only between a clean close and the next open
    cleaner-offset.checkpoint     how far compaction got (``_cleaner_checkpoint``)
    *.cleaned, *.swap, *.deleted  a compaction swap in progress (``_compaction``)

and, for all partitions together, the data directory's ``recovery-positions.checkpoint``
(``_synced_checkpoint``): how many bytes of each active segment were fsynced, so that
recovery after a crash reads only what came after them, not the whole active segment.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from headrace.base import fsync_dir

from ._checkpoint import read_offset
from ._compaction import finish_interrupted
from ._segment import QUARANTINE_SUFFIX, LogSegment, remove_segment_files, segment_name
from ._synced_checkpoint import SyncedPosition

log = logging.getLogger("headrace.broker.storage")

CLEAN_SHUTDOWN_FILE = ".clean-shutdown"
LOG_START_FILE = "log-start-offset.checkpoint"
RECOVERY_POINT_FILE = "recovery-point.checkpoint"


@dataclass(slots=True)
class Recovered:
    segments: list[LogSegment]  # never empty
    log_start_offset: int
    recovery_base: int | None  # as read from its checkpoint (None after a clean close)
    clean: bool  # the clean-shutdown marker was there (the caller removes it)
    # Where the durable part of the log ends, when the active segment holds checked but
    # not yet fsynced bytes after its synced prefix (None: all of it is durable).
    flushed_offset: int | None = None


def recover_segments(
    path: Path, index_interval: int, synced: SyncedPosition | None = None
) -> Recovered:
    """Open every segment in ``path``, recovering whatever a crash may have damaged.

    Steps: finish or undo a compaction swap a crash cut short (``_compaction``); drop
    leftovers of interrupted writes; after a clean shutdown, load every
    segment from its indexes; otherwise load the segments below the recovery point and
    rebuild the rest from their data (CRC-checked, torn or corrupt tail cut off, every
    segment after a cut removed), except that of the segment ``synced`` names, whose
    fsynced prefix is loaded from its indexes and only the rest scanned; a segment whose
    indexes do not check out is rebuilt either way; finally fsync whatever was rebuilt
    or scanned, so all of it counts as flushed; except the bytes found after the synced
    prefix of the active segment, which the log's first sync covers (they were not
    acknowledged, or were synced after the checkpoint was written: either way nothing
    more is promised of them than before the crash), so that a restart makes no fsync
    per partition.
    """
    path.mkdir(parents=True, exist_ok=True)
    finish_interrupted(path, index_interval)
    clean = (path / CLEAN_SHUTDOWN_FILE).exists()
    bases = _segment_bases(path)
    recovery_base = None if clean else read_offset(path / RECOVERY_POINT_FILE)
    stored_start = read_offset(path / LOG_START_FILE) or 0
    segments: list[LogSegment] = []
    rebuilt: list[LogSegment] = []
    flushed_offset = None
    try:
        for i, base in enumerate(bases):
            segment = LogSegment(path, base, index_interval)
            segments.append(segment)
            last = i == len(bases) - 1
            trusted = clean or (recovery_base is not None and base < recovery_base and not last)
            if trusted and segment.load():
                continue
            tail = _recover_synced_prefix(segment, synced)
            if tail is not None and tail[0] == 0 and last:
                # Nothing cut: the prefix is durable; the rest waits for the first sync.
                if synced is not None and segment.size > synced.position:
                    flushed_offset = tail[1]
                continue
            rebuilt.append(segment)
            cut = segment.rebuild(verify=True) if tail is None else tail[0]
            if cut:
                log.error(
                    "recovery of %s cut %d bytes after offset %d (a torn or corrupt batch "
                    "at byte %d); the bytes are kept in %s",
                    segment.path,
                    cut,
                    segment.next_offset,
                    segment.size,
                    segment.quarantine_path,
                )
            if cut and not last:
                # Bytes after a hole cannot be trusted to follow on: set them aside.
                for later in bases[i + 1 :]:
                    _set_aside(path, later)
                break
        if not segments:
            segments.append(LogSegment(path, stored_start, index_interval))
            rebuilt.append(segments[-1])
        for segment in rebuilt:
            segment.fsync()
        if rebuilt:
            fsync_dir(path)
    except BaseException:
        for segment in segments:
            segment.close()
        raise
    end = segments[-1].next_offset
    log_start = min(max(stored_start, segments[0].base_offset), end)
    return Recovered(segments, log_start, recovery_base, clean, flushed_offset)


def _recover_synced_prefix(
    segment: LogSegment, synced: SyncedPosition | None
) -> tuple[int, int] | None:
    """``LogSegment.load_synced_prefix`` if ``synced`` names this very segment file."""
    if synced is None or (synced.base_offset, synced.inode) != (
        segment.base_offset,
        segment.inode,
    ):
        return None
    return segment.load_synced_prefix(synced.position)


def _set_aside(directory: Path, base: int) -> None:
    """Move a whole segment that follows a cut out of the log, keeping its data."""
    data = directory / f"{segment_name(base)}.log"
    kept = data.with_name(data.name + QUARANTINE_SUFFIX)
    log.error(
        "recovery set aside segment %s (%d bytes, from offset %d) as %s: it follows "
        "a cut and may not continue the log",
        data,
        data.stat().st_size,
        base,
        kept,
    )
    data.replace(kept)
    remove_segment_files(directory, base)


def _segment_bases(directory: Path) -> list[int]:
    """Base offsets of the segments in ``directory``, after clearing away leftovers:
    temporary files, and index files whose segment is gone.

    Removing the oldest segments (retention, DeleteRecords) unlinks each segment's data
    before its indexes, so a crash can leave indexes below the first segment: those are
    removed. Indexes at or after the first segment, or with no segment left at all, mean
    that a segment's data went missing while the broker was down: its records are lost,
    so that is an ERROR line, and the indexes are set aside, not deleted."""
    bases = []
    orphans: list[Path] = []
    for entry in directory.iterdir():
        name, suffix = entry.stem, entry.suffix
        if suffix == ".tmp":
            entry.unlink()
        elif len(name) == 20 and name.isdigit():
            if suffix == ".log":
                bases.append(int(name))
            elif suffix in (".index", ".timeindex") and not entry.with_suffix(".log").exists():
                orphans.append(entry)
    bases.sort()
    for index in sorted(orphans):
        base = int(index.stem)
        if bases and base < bases[0]:
            index.unlink()
            continue
        kept = index.with_name(index.name + QUARANTINE_SUFFIX)
        index.replace(kept)
        if index.suffix == ".index":
            following = next((b for b in bases if b > base), None)
            log.error(
                "segment %s is missing while its indexes remain: the records from offset "
                "%d%s are lost; its indexes are kept as %s",
                index.with_suffix(".log"),
                base,
                "" if following is None else f" to {following - 1}",
                kept,
            )
    return bases
