"""What the cleaner remembers about one log between passes: ``cleaner-offset.checkpoint``.

- The first dirty offset: every offset below it has been compacted against every key
  seen up to it. The bytes from there to the cleanable end are the dirty share that
  ``min.cleanable.dirty.ratio`` is measured on.
- Cleaned-at marks: ``(end, time)`` pairs with increasing ends. Offsets below ``end``
  (and at or past the previous mark's end) were first compacted at ``time``.
- The revisit time: when a pass over the clean part alone could remove or stamp
  transaction markers (``_markers``), or None; such a pass is due then even if
  nothing is dirty.

Tombstones follow Kafka's delete-horizon rule (KIP-534): a tombstone may be removed once
``delete.retention.ms`` has passed since the pass that first compacted it, whatever
its record timestamp says (a producer chooses CreateTime; the broker's clock decides
here). A consumer that started reading before that pass therefore has at least
``delete.retention.ms`` to see the deletion. Kafka keeps that time in the rewritten
batch's header; here it is kept beside the log, per range of offsets, so cleaned
batches stay byte-for-byte what ``encode_batch`` writes.

A lost or unreadable file is harmless: everything counts as dirty again, and
tombstones start their wait from the next pass (later, never earlier, removal).

Format (ASCII lines): ``2`` (version), the first dirty offset, the revisit time (``-``
for none), then ``end time`` per mark. Version ``1`` files (no revisit line) are read
too. Written with ``write_atomically``.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from headrace.base import write_atomically

CLEANER_CHECKPOINT_FILE = "cleaner-offset.checkpoint"
_VERSION = "2"
_VERSION_WITHOUT_REVISIT = "1"
# Passes whose tombstones are still waiting; more than this and the oldest neighbours
# merge, taking the later time (tombstones then live a little longer, never shorter).
MAX_MARKS = 64


@dataclass(frozen=True, slots=True)
class CleanerCheckpoint:
    first_dirty_offset: int = 0
    marks: tuple[tuple[int, int], ...] = ()
    revisit_ms: int | None = None

    def first_cleaned_at(self, offset: int) -> int | None:
        """When the pass that first compacted ``offset`` ran; None if none did yet."""
        i = bisect_right([end for end, _ in self.marks], offset)
        return self.marks[i][1] if i < len(self.marks) else None

    def after_pass(
        self,
        dirty_end: int,
        now_ms: int,
        delete_retention_ms: int,
        revisit_ms: int | None = None,
    ) -> CleanerCheckpoint:
        """The checkpoint after a pass at ``now_ms`` compacted everything below
        ``dirty_end`` and asked to be followed by one at ``revisit_ms``.

        Steps: marks whose tombstones this pass was allowed to remove (cleaned at or
        before ``now_ms - delete_retention_ms``) hold no tombstones any more and merge
        into one; the newly compacted range gets a mark at ``now_ms``; past
        ``MAX_MARKS`` the two oldest marks merge.
        """
        spent_before = now_ms - delete_retention_ms
        marks: list[tuple[int, int]] = []
        for end, at in self.marks:
            if marks and at <= spent_before and marks[-1][1] <= spent_before:
                marks[-1] = (end, max(at, marks[-1][1]))
            else:
                marks.append((end, at))
        if dirty_end > (marks[-1][0] if marks else 0):
            marks.append((dirty_end, now_ms))
        while len(marks) > MAX_MARKS:
            (_, first_at), (second_end, second_at) = marks[0], marks[1]
            marks[0:2] = [(second_end, max(first_at, second_at))]
        return CleanerCheckpoint(max(self.first_dirty_offset, dirty_end), tuple(marks), revisit_ms)


def read_checkpoint(path: Path) -> CleanerCheckpoint:
    """The stored checkpoint, or an empty one if the file is absent or damaged."""
    try:
        version, first_line, *rest = path.read_text(encoding="ascii").split("\n")
        if version not in (_VERSION, _VERSION_WITHOUT_REVISIT):
            return CleanerCheckpoint()
        first_dirty = int(first_line)
        revisit = None
        if version == _VERSION:
            revisit_line, *rest = rest
            revisit = None if revisit_line == "-" else int(revisit_line)
        marks = []
        for line in rest:
            if line:
                end, at = line.split()
                marks.append((int(end), int(at)))
    except (OSError, UnicodeDecodeError, IndexError, ValueError):
        return CleanerCheckpoint()
    if any(a[0] >= b[0] for a, b in pairwise(marks)):
        return CleanerCheckpoint()
    return CleanerCheckpoint(first_dirty, tuple(marks), revisit)


def write_checkpoint(path: Path, checkpoint: CleanerCheckpoint) -> None:
    revisit = "-" if checkpoint.revisit_ms is None else str(checkpoint.revisit_ms)
    lines = [_VERSION, str(checkpoint.first_dirty_offset), revisit]
    lines += [f"{end} {at}" for end, at in checkpoint.marks]
    write_atomically(path, ("\n".join(lines) + "\n").encode("ascii"))
