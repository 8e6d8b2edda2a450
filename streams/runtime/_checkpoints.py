"""When an at-least-once task writes its checkpoint: once enough has changed.

A checkpoint costs a sync of every RocksDB store's log and an fsynced file, several
milliseconds a task, and at every commit that stalled processing for most of the
commit's time. What a checkpoint buys is a shorter restore after a crash: a restart
reads the changelog from the checkpointed offsets instead of from the beginning. So,
as Kafka Streams does (``StreamTask.maybeCheckpoint``), a task writes one only when its
changelogs grew by at least :data:`CHECKPOINT_RECORDS` records since the last one, and
always when it closes cleanly (a rebalance, a shutdown). A crash then restores at most
that many records more than it had to; it never loses state, because the offsets a
checkpoint names are committed and the stores are synced before it is written.

Writing one, step by step:

1. sync every store of the task (``TaskExecutor.flush``): what the stores hold reaches
   the disk. They may hold more than the checkpoint names (records processed since),
   which at-least-once allows: restoring replays the changelog from the checkpoint on
   top, and every record of it is applied again;
2. write the checkpoint file with the changelog offsets of the last finished commit.

Under exactly-once none of this runs at a commit: the live stores are never trusted
after a crash, snapshots and the checkpoint of a clean close are (``_commit.py``).
"""

from __future__ import annotations

from ._tasks import RuntimeTask

# Changelog records since the last checkpoint that make the next one due (Kafka
# Streams' OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT).
CHECKPOINT_RECORDS = 10_000


class CheckpointPolicy:
    """Decides whether a task's checkpoint is due, and writes it (module docstring)."""

    def __init__(self, every_records: int = CHECKPOINT_RECORDS) -> None:
        self.every_records = every_records

    def due(self, task: RuntimeTask, closing: bool = False) -> bool:
        offsets = task.changelog_offsets
        if not offsets or offsets == task.checkpointed:
            return False
        if closing:
            return True
        written = task.checkpointed
        grown = sum(o - written.get(tp, 0) for tp, o in offsets.items())
        return grown >= self.every_records

    def write(self, task: RuntimeTask) -> None:
        """Steps 1 and 2; the caller has sent what step 1's cache flush forwarded."""
        task.executor.flush()
        task.write_checkpoint()
