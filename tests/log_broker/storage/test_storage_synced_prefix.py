"""Restart after a crash with a recovery checkpoint: only bytes after each active
segment's synced prefix are read again, and a torn tail is still found.

A crash is simulated by opening a log's directory again while the first instance is
still open (no clean-shutdown marker, same files, so the same inodes).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from storage_batches import all_records, batch

from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import LogManager, PartitionLog, TopicConfig
from headrace.log_broker.storage._segment import LogSegment
from headrace.log_broker.storage._synced_checkpoint import FILE, SyncedPosition

CONFIG = TopicConfig.from_overrides({"index.interval.bytes": "4096"})


@pytest.fixture
def crc_checked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Bytes handed to a CRC-checking scan (what recovery reads and checks again)."""
    scanned: list[int] = []
    original = _records.scan_batches

    def counting(data: bytes | bytearray | memoryview, *, verify_crc: bool) -> Iterator[object]:
        if verify_crc:
            scanned.append(len(data))
        return original(data, verify_crc=verify_crc)

    monkeypatch.setattr(_records, "scan_batches", counting)
    return scanned


@pytest.fixture
def rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    rebuilt: list[int] = []
    original = LogSegment.rebuild

    def spy(self: LogSegment, *, verify: bool) -> int:
        rebuilt.append(self.base_offset)
        cut: int = original(self, verify=verify)
        return cut

    monkeypatch.setattr(LogSegment, "rebuild", spy)
    return rebuilt


def _fill(log: PartitionLog, batches: int) -> None:
    for i in range(batches):
        log.append(batch(20, timestamp=1_000 + i, value_size=400, tag=i), now_ms=0)


def test_restart_reads_no_more_than_what_followed_each_checkpointed_prefix(
    tmp_path: Path, crc_checked: list[int]
) -> None:
    manager = LogManager.open(tmp_path)
    topic = manager.create_topic("t", 40, {"index.interval.bytes": "4096"})
    for log in topic.partitions:
        _fill(log, 20)
        log.sync()
    size = sum(log.size_bytes for log in topic.partitions)
    assert manager.checkpoint_synced_positions(0) == 40 + 0  # every partition listed
    ends = [log.log_end_offset for log in topic.partitions]

    crc_checked.clear()
    reopened = LogManager.open(tmp_path)  # a crash: the first one never closed
    logs = reopened.topics()["t"].partitions
    # Nothing after the synced prefixes: nothing read again, whatever the log's size.
    assert sum(crc_checked) == 0
    assert [log.log_end_offset for log in logs] == ends
    assert all(log.flushed_offset == log.log_end_offset for log in logs)
    assert len(all_records(logs[7])) == 20 * 20
    reopened.close()

    # Without the checkpoint, the same restart reads every byte again.
    (tmp_path / FILE).unlink()
    for log in topic.partitions:
        os.unlink(log.directory / ".clean-shutdown")
    crc_checked.clear()
    again = LogManager.open(tmp_path)
    assert sum(crc_checked) >= size
    again.close()
    manager.close()


def test_a_torn_tail_after_the_synced_prefix_is_cut_and_the_rest_awaits_a_sync(
    tmp_path: Path, crc_checked: list[int], rebuilds: list[int]
) -> None:
    log = PartitionLog.open(tmp_path / "t-0", "t", 0, CONFIG)
    _fill(log, 10)
    log.sync()
    synced = log.synced_position
    _fill(log, 3)  # appended, never synced
    end = log.log_end_offset
    whole = log.size_bytes
    data = log.directory / f"{0:020d}.log"
    with data.open("ab") as torn:
        torn.write(bytes(batch(5))[:50])  # half a batch: the crash cut its write

    crc_checked.clear()
    reopened = PartitionLog.open(tmp_path / "t-0", "t", 0, CONFIG, synced)
    assert rebuilds == []  # the prefix came from the indexes
    assert sum(crc_checked) <= whole - synced.position + 50  # the tail only
    assert reopened.log_end_offset == end
    assert data.stat().st_size == whole  # the torn batch is gone
    # A cut is made durable at once, with the tail before it.
    assert reopened.flushed_offset == end
    assert [r.offset for r in all_records(reopened)] == list(range(end))
    reopened.close()
    log.close()


def test_an_unsynced_whole_tail_is_kept_and_left_to_the_first_sync(
    tmp_path: Path, rebuilds: list[int]
) -> None:
    log = PartitionLog.open(tmp_path / "t-0", "t", 0, CONFIG)
    _fill(log, 10)
    log.sync()
    synced = log.synced_position
    prefix_end = log.log_end_offset
    _fill(log, 3)  # appended, never synced
    end, whole = log.log_end_offset, log.size_bytes

    reopened = PartitionLog.open(tmp_path / "t-0", "t", 0, CONFIG, synced)
    assert rebuilds == [] and reopened.log_end_offset == end
    assert reopened.flushed_offset == prefix_end  # no fsync at open: not durable yet
    assert reopened.synced_position == synced
    reopened.sync()
    assert reopened.flushed_offset == end
    assert reopened.synced_position.position == whole
    reopened.close()
    log.close()


def test_a_position_for_another_file_or_damaged_indexes_mean_a_full_rebuild(
    tmp_path: Path, rebuilds: list[int]
) -> None:
    log = PartitionLog.open(tmp_path / "t-0", "t", 0, CONFIG)
    _fill(log, 10)
    log.sync()
    synced = log.synced_position
    end = log.log_end_offset

    other_file = replace(synced, inode=synced.inode + 1)  # a topic made again
    reopened = PartitionLog.open(tmp_path / "t-0", "t", 0, CONFIG, other_file)
    assert rebuilds == [0] and reopened.log_end_offset == end
    reopened.close()

    os.unlink(log.directory / ".clean-shutdown")
    with (log.directory / f"{0:020d}.index").open("ab") as index:
        index.write(bytes(8))  # zeros where a power cut lost unsynced index entries
    again = PartitionLog.open(
        tmp_path / "t-0", "t", 0, CONFIG, SyncedPosition(0, synced.inode, synced.position)
    )
    assert rebuilds == [0, 0] and again.log_end_offset == end
    assert [r.offset for r in all_records(again)] == list(range(end))
    again.close()
    log.close()
