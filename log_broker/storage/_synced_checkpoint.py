"""How much of each partition's active segment is known to be on disk, for all partitions
in one file: ``<data dir>/recovery-positions.checkpoint``.

After a crash, recovery rebuilds the segments from each log's recovery point on from
their data, reading and CRC-checking every batch (``_recovery``). The recovery point is
a segment, so that is the whole active segment, and with 1,000 partitions and 10 GB of
log it is nearly all the data. A log's sync knows how many bytes of the active segment
it made durable; this file keeps those positions, so recovery loads that prefix from
its indexes and checks only the bytes after it. Like Kafka's
``recovery-point-offset-checkpoint`` it is one file for the whole directory, rewritten
now and then (every ``INTERVAL_MS`` when something changed), not at every sync: a
write costs two fsyncs, and a position that is a little old only means a little more
to scan.

Format: a version line, then one line per partition directory::

    1
    orders-0 00000000000000001200 1835019 5242880

(directory name, active segment base offset, inode of its ``.log`` file, bytes
fsynced). The inode ties a position to one file: a topic deleted and created again
makes new files with the same names. A file that does not parse is ignored, which
costs only a full recovery.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from headrace.base import write_atomically

log = logging.getLogger("headrace.broker.storage")

FILE = "recovery-positions.checkpoint"
INTERVAL_MS = 1000
_VERSION = "1"


@dataclass(frozen=True, slots=True)
class SyncedPosition:
    base_offset: int  # of the segment the position is in
    inode: int  # of that segment's .log file
    position: int  # bytes from its start known to be on disk


def read_positions(data_dir: Path) -> dict[str, SyncedPosition]:
    """The positions by partition directory name; empty if the file is absent or
    damaged (recovery then scans whole active segments, as without it)."""
    try:
        lines = (data_dir / FILE).read_text(encoding="ascii").splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        return {}
    if not lines or lines[0] != _VERSION:
        log.warning("ignoring %s: unknown version", data_dir / FILE)
        return {}
    positions: dict[str, SyncedPosition] = {}
    for line in lines[1:]:
        fields = line.split(" ")
        try:
            name, base, inode, position = fields[0], *map(int, fields[1:])
        except ValueError:
            log.warning("ignoring %s: unreadable line %r", data_dir / FILE, line)
            return {}
        positions[name] = SyncedPosition(base, inode, position)
    return positions


def render(positions: Mapping[str, SyncedPosition]) -> bytes:
    lines = [_VERSION]
    lines.extend(
        f"{name} {p.base_offset:020d} {p.inode} {p.position}"
        for name, p in sorted(positions.items())
    )
    return ("\n".join(lines) + "\n").encode("ascii")


def write_positions(data_dir: Path, content: bytes) -> None:
    write_atomically(data_dir / FILE, content)
