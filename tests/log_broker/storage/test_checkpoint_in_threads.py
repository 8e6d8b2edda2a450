"""Producer-state checkpoints of many partitions written off the event loop
(``PartitionTxns.checkpoint_in_threads``): the same files as a checkpoint on the loop,
a round that outlives a cancelled caller, and a failed write tried again."""

from __future__ import annotations

import asyncio
from pathlib import Path

from compaction_helpers import compacted_log
from compaction_txn_helpers import Tracked, snapshot_offsets

from headrace.log_broker._txn_partitions import PartitionTxns, load
from headrace.log_broker.storage import PartitionLog


def _partitions(tmp_path: Path, count: int) -> list[PartitionLog]:
    logs = []
    for i in range(count):
        log = compacted_log(tmp_path / f"p{i}")
        t = Tracked(log)
        t.txn(1, [(b"a", b"aborted")])
        t.end(1, commit=False)
        t.txn(2, [(b"b", b"open")])  # still open: the last stable offset stops there
        logs.append(log)
    return logs


def _assert_reloads_from_snapshot(logs: list[PartitionLog], txns: PartitionTxns) -> None:
    for log in logs:
        live = txns.get(log)
        assert live.snapshot_offset == log.log_end_offset
        assert log.log_end_offset in snapshot_offsets(log.directory)
        again = load(log)
        assert again.snapshot_offset == log.log_end_offset  # nothing left to replay
        assert again.aborted.entries() == live.aborted.entries() != []
        assert again.last_stable_offset() == live.last_stable_offset() < log.log_end_offset


def test_every_changed_partition_is_written_and_reloads(tmp_path: Path) -> None:
    logs = _partitions(tmp_path, 6)
    txns = PartitionTxns()
    states = [txns.get(log) for log in logs]  # loaded by replay: changed
    assert all(s.changed for s in states)
    assert asyncio.run(txns.checkpoint_in_threads()) == 6
    assert not any(s.changed for s in states)
    _assert_reloads_from_snapshot(logs, txns)
    assert asyncio.run(txns.checkpoint_in_threads()) == 0  # nothing changed since
    for log in logs:
        log.close()


def test_a_cancelled_caller_leaves_the_round_to_finish(tmp_path: Path) -> None:
    logs = _partitions(tmp_path, 6)
    txns = PartitionTxns()
    for log in logs:
        txns.get(log)

    async def cancel_then_checkpoint_again() -> int:
        first = asyncio.ensure_future(txns.checkpoint_in_threads())
        await asyncio.sleep(0)  # the round has taken the states and started writing
        first.cancel()
        # Nothing changed since the first round took the states; this one returns
        # only after that round, cancelled caller or not, made its files durable.
        return await txns.checkpoint_in_threads()

    assert asyncio.run(cancel_then_checkpoint_again()) == 0
    _assert_reloads_from_snapshot(logs, txns)
    for log in logs:
        log.close()


def test_a_failed_write_is_tried_again_at_the_next_round(tmp_path: Path) -> None:
    [log] = _partitions(tmp_path, 1)
    txns = PartitionTxns()
    state = txns.get(log)
    moved = log.directory.with_name("moved-away")
    log.directory.rename(moved)  # the checkpoint's files cannot be created
    try:
        assert asyncio.run(txns.checkpoint_in_threads()) == 0
    finally:
        moved.rename(log.directory)
    assert state.changed
    assert asyncio.run(txns.checkpoint_in_threads()) == 1
    _assert_reloads_from_snapshot([log], txns)
    log.close()
