"""The task checkpoint: which changelog offset each store's state reflects.

One file per task, ``<state_dir>/.checkpoint``, in Kafka Streams' text layout:

    0                      version
    2                      number of entries
    app-counts-changelog 0 1234
    app-totals-changelog 0 99

Commit order (the runtime's ``streams/runtime/_commit.py`` follows it):

1. flush every store of the task (caches write down, RocksDB syncs its log) and the
   producer, so the changelog holds what the stores hold;
2. commit the task's offsets (or its transaction);
3. ``write_checkpoint`` with the changelog offsets the flushed state covers.

The checkpoint comes last, as in Kafka Streams' ``postCommit``, because it may only
name changelog records that are committed: under exactly-once they belong to a
transaction that may still abort until step 2 succeeds. A crash between 2 and 3 only
leaves an older checkpoint, so a restart restores more of the changelog than needed.

Under exactly-once, call ``delete_checkpoint`` before processing starts, so a crash
before the next commit leaves no checkpoint and the stores are rebuilt from the
changelog instead of trusting state that may include uncommitted writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from headrace.base import write_atomically

from ._errors import CheckpointError, StoreIOError

CHECKPOINT_FILE = ".checkpoint"
_VERSION = 0

TopicPartition = tuple[str, int]


class TaskCheckpoint:
    """Reads and atomically replaces one task's checkpoint file."""

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / CHECKPOINT_FILE

    def write_checkpoint(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Write to a temporary file, fsync it, rename it over the old one, fsync the
        directory: a reader sees the old checkpoint or the new one, never a torn one."""
        lines = [str(_VERSION), str(len(offsets))]
        for (topic, partition), offset in sorted(offsets.items()):
            if not topic or any(c.isspace() for c in topic):
                raise ValueError(f"not a topic name: {topic!r}")
            lines.append(f"{topic} {int(partition)} {int(offset)}")
        data = ("\n".join(lines) + "\n").encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.path, data)
        except OSError as error:
            raise StoreIOError(f"cannot write checkpoint {self.path}: {error}") from error

    def read_checkpoint(self) -> dict[TopicPartition, int]:
        """The offsets last written, or an empty mapping when there is no checkpoint."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise StoreIOError(f"cannot read checkpoint {self.path}: {error}") from error
        lines = text.splitlines()
        try:
            version, count = int(lines[0]), int(lines[1])
            if version != _VERSION:
                raise CheckpointError(f"checkpoint {self.path} has unknown version {version}")
            entries = lines[2:]
            if len(entries) != count:
                raise CheckpointError(
                    f"checkpoint {self.path} promises {count} entries, holds {len(entries)}"
                )
            offsets: dict[TopicPartition, int] = {}
            for line in entries:
                topic, partition, offset = line.split(" ")
                offsets[(topic, int(partition))] = int(offset)
        except (IndexError, ValueError) as error:
            raise CheckpointError(f"checkpoint {self.path} is malformed: {error}") from error
        return offsets

    def delete_checkpoint(self) -> None:
        try:
            self.path.unlink(missing_ok=True)
        except OSError as error:
            raise StoreIOError(f"cannot delete checkpoint {self.path}: {error}") from error
