"""Bringing a partition directory back to a consistent set of segments on open.

Files a log keeps beside its segments::

    log-start-offset.checkpoint   log start moved by DeleteRecords or retention
    recovery-point.checkpoint     base offset of the first segment that may hold bytes
                                  not yet fsynced (moved up by every sync)
    .clean-shutdown               present only between a clean close and the next open
    cleaner-offset.checkpoint     how far compaction got (``_cleaner_checkpoint``)
    *.cleaned, *.swap, *.deleted  a compaction swap in progress (``_compaction``)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from headrace.base import fsync_dir

from ._checkpoint import read_offset
from ._compaction import finish_interrupted
from ._segment import QUARANTINE_SUFFIX, LogSegment, remove_segment_files, segment_name

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


def recover_segments(path: Path, index_interval: int) -> Recovered:
    """Open every segment in ``path``, recovering whatever a crash may have damaged.

    Steps: finish or undo a compaction swap a crash cut short (``_compaction``); drop
    leftovers of interrupted writes; after a clean shutdown, load every
    segment from its indexes; otherwise load the segments below the recovery point and
    rebuild the rest from their data (CRC-checked, torn or corrupt tail cut off, every
    segment after a cut removed); a segment whose indexes do not check out is rebuilt
    either way; finally fsync whatever was rebuilt, so all of it counts as flushed.
    """
    path.mkdir(parents=True, exist_ok=True)
    finish_interrupted(path, index_interval)
    clean = (path / CLEAN_SHUTDOWN_FILE).exists()
    bases = _segment_bases(path)
    recovery_base = None if clean else read_offset(path / RECOVERY_POINT_FILE)
    stored_start = read_offset(path / LOG_START_FILE) or 0
    segments: list[LogSegment] = []
    rebuilt: list[LogSegment] = []
    try:
        for i, base in enumerate(bases):
            segment = LogSegment(path, base, index_interval)
            segments.append(segment)
            last = i == len(bases) - 1
            trusted = clean or (recovery_base is not None and base < recovery_base and not last)
            if trusted and segment.load():
                continue
            rebuilt.append(segment)
            cut = segment.rebuild(verify=True)
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
    return Recovered(segments, log_start, recovery_base, clean)


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
    """Base offsets of the segments in ``directory``, after removing leftovers: temporary
    files and index files whose segment is gone."""
    bases = []
    for entry in directory.iterdir():
        name, suffix = entry.stem, entry.suffix
        if suffix == ".tmp":
            entry.unlink()
        elif len(name) == 20 and name.isdigit():
            if suffix == ".log":
                bases.append(int(name))
            elif suffix in (".index", ".timeindex") and not entry.with_suffix(".log").exists():
                entry.unlink()
    return sorted(bases)
