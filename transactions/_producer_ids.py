"""Producer ids that stay unique across broker restarts.

Ids are handed out from blocks. Before the first id of a block is given out, the end of
the block is written durably (temp file, fsync, rename), so after a crash allocation
resumes past every id that could have been issued, at the cost of skipping the unused
rest of a block.
"""

from __future__ import annotations

from pathlib import Path

from headrace.base import write_atomically

from ._errors import CorruptSnapshotError

BLOCK_SIZE = 1000


class ProducerIdAllocator:
    def __init__(self, path: Path, block_size: int = BLOCK_SIZE) -> None:
        self._path = path
        self._block_size = block_size
        self._next = self._read_reserved_end()
        self._reserved_end = self._next

    def _read_reserved_end(self) -> int:
        try:
            text = self._path.read_bytes().strip()
        except FileNotFoundError:
            return 0
        try:
            end = int(text or 0)
        except ValueError:
            end = -1
        if end < 0:
            # Guessing would risk handing out an id already in use: stop, and say where.
            raise CorruptSnapshotError(
                f"producer id file {self._path} is corrupt (holds {text[:40]!r}, not a "
                "count); put in it a number above every producer id ever issued, e.g. the "
                "largest in the broker's log, rounded up to the next thousand"
            )
        return end

    def _reserve(self, end: int) -> None:
        write_atomically(self._path, str(end).encode("ascii"))
        self._reserved_end = end

    def allocate(self) -> int:
        if self._next >= self._reserved_end:
            self._reserve(self._next + self._block_size)
        pid = self._next
        self._next += 1
        return pid
