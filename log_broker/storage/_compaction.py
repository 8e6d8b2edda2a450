"""Swapping cleaned segments in for their originals so that a crash at any moment
leaves a log that opens consistently (the file protocol of Kafka's cleaner and loader).

A cleaned segment replaces a run of consecutive original segments and takes the first
one's base offset. Its three files carry a suffix that says how far the swap got::

    B.log.cleaned   being written, or written but not committed: delete on recovery
    B.log.swap      committed: replaces every original segment whose base offset lies
                    in [B, end of the swap's data], and B itself
    S.log.deleted   an original already replaced: delete on recovery

Renaming the ``.log`` file from ``.cleaned`` to ``.swap`` is the commit point; index
files are renamed before it and are rebuilt by recovery anyway, so a crash between the
renames of one segment's files cannot mix an old index with new data.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from headrace.base import fsync_dir

from ._segment import LogSegment, segment_name

CLEANED = ".cleaned"
SWAP = ".swap"
DELETED = ".deleted"
_SUFFIXED = re.compile(r"(\d{20})\.(log|index|timeindex)(\.cleaned|\.swap|\.deleted)")

# Called with the name of each step of ``install`` once the step is done. Only tests
# set it, to stop the process at a chosen step as a crash would.
crash_hook: Callable[[str], None] | None = None


def step(name: str) -> None:
    if crash_hook is not None:
        crash_hook(name)


def install(cleaned: LogSegment, sources: Sequence[LogSegment]) -> None:
    """Replace ``sources`` by ``cleaned`` on disk. The caller holds the log's lock,
    has checked that ``sources`` are still part of the log, and has written and
    fsynced ``cleaned`` under the ``.cleaned`` suffix.

    Steps: rename the cleaned files to ``.swap``, log file last (the commit point),
    fsync the directory; rename every source's files to ``.deleted``; rename the swap
    files to their final names; fsync the directory; delete the ``.deleted`` files.
    A crash after the commit point is rolled forward by ``finish_interrupted``, a
    crash before it rolled back.
    """
    directory = cleaned.path.parent
    cleaned.rename(CLEANED, SWAP)
    fsync_dir(directory)
    step("swap")
    for i, source in enumerate(sources):
        source.rename("", DELETED)
        step(f"deleted-{i}")
    cleaned.rename(SWAP, "")
    fsync_dir(directory)
    step("installed")
    for source in sources:
        source.unlink()
    step("unlinked")


def finish_interrupted(directory: Path, index_interval: int) -> None:
    """Complete or undo a swap that a crash cut short, before the log's segments load.

    Steps: delete ``.cleaned`` files (an uncommitted pass: the originals are intact);
    for each committed ``.log.swap``, rebuild its indexes from its data (CRC-checked),
    move every original it replaces to ``.deleted``, and give the swap files their
    final names; then delete every ``.deleted`` file and any stray suffixed index
    file; fsync the directory if anything changed.
    """
    suffixed = [(entry, _SUFFIXED.fullmatch(entry.name)) for entry in directory.iterdir()]
    found = [(entry, match) for entry, match in suffixed if match is not None]
    if not found:
        return
    swaps = sorted(int(m[1]) for _, m in found if m[2] == "log" and m[3] == SWAP)
    for entry, match in found:
        if match[3] == CLEANED:
            entry.unlink()
    for base in swaps:
        swapped = LogSegment(directory, base, index_interval, SWAP)
        try:
            swapped.rebuild(verify=True)
            swapped.fsync()
            end = max(swapped.next_offset, base + 1)
            for original in _live_bases(directory):
                if base <= original < end:
                    for kind in (".log", ".index", ".timeindex"):
                        path = directory / f"{segment_name(original)}{kind}"
                        if path.exists():
                            os.replace(path, path.with_name(path.name + DELETED))
            swapped.rename(SWAP, "")
        finally:
            swapped.close()
    for entry in directory.iterdir():
        leftover = _SUFFIXED.fullmatch(entry.name)
        if leftover is not None and leftover[3] in (DELETED, SWAP):
            entry.unlink()
    fsync_dir(directory)


def _live_bases(directory: Path) -> list[int]:
    return sorted(
        int(entry.name[:20])
        for entry in directory.iterdir()
        if entry.name.endswith(".log") and len(entry.name) == 24 and entry.name[:20].isdigit()
    )
