from __future__ import annotations

from pathlib import Path

import pytest
from storage_batches import all_records, batch, offsets_in, open_log

from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import OffsetOutOfRangeError, PartitionLog, TopicConfig

HOUR = 3_600_000


def test_retention_by_time_uses_each_segments_largest_timestamp(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=len(batch(10)), retention_ms=HOUR)
    for i in range(4):
        log.append(batch(10, timestamp=i * HOUR), now_ms=0)
    assert log.segment_base_offsets() == [0, 10, 20, 30]
    # Segment 0's newest record is 9 ms past 0; at 1h + 9 ms it is exactly 1h old.
    assert log.apply_retention(HOUR + 9) == 0
    assert log.apply_retention(HOUR + 10) == 1
    assert log.segment_base_offsets() == [10, 20, 30] and log.log_start_offset == 10
    # Far in the future everything but the active segment goes.
    assert log.apply_retention(100 * HOUR) == 2
    assert log.segment_base_offsets() == [30] and log.log_start_offset == 30
    assert [r.offset for r in all_records(log)] == list(range(30, 40))
    assert not (tmp_path / "t-0" / f"{0:020d}.log").exists()
    with pytest.raises(OffsetOutOfRangeError):
        log.read(5, 100)
    log.close()


def test_retention_by_bytes_keeps_the_newest_segments(tmp_path: Path) -> None:
    one = len(batch(10))
    log = open_log(tmp_path, segment_bytes=one, retention_bytes=one * 2)
    for _ in range(4):
        log.append(batch(10), now_ms=0)
    assert log.size_bytes == 4 * one
    assert log.apply_retention(0) == 2
    assert log.segment_base_offsets() == [20, 30] and log.size_bytes == 2 * one
    assert log.apply_retention(0) == 0
    log.close()


def test_unlimited_retention_and_compact_only_topics_keep_everything(tmp_path: Path) -> None:
    one = len(batch(10))
    for name, overrides in (
        ("a", {"retention.ms": "-1", "retention.bytes": "-1"}),
        ("b", {"cleanup.policy": "compact", "retention.ms": "1", "retention.bytes": "0"}),
    ):
        config = TopicConfig.from_overrides({"segment.bytes": str(one), **overrides})
        log = PartitionLog.open(tmp_path / f"{name}-0", name, 0, config)
        for _ in range(3):
            log.append(batch(10), now_ms=0)
        assert log.apply_retention(10**15) == 0
        assert log.segment_base_offsets() == [0, 10, 20]
        log.close()


def test_the_active_segment_is_never_deleted(tmp_path: Path) -> None:
    log = open_log(tmp_path, retention_ms=1, retention_bytes=0)
    log.append(batch(10), now_ms=0)
    assert log.apply_retention(10**12) == 0
    assert log.log_end_offset == 10 and log.log_start_offset == 0
    log.close()


def test_delete_records_moves_the_start_and_drops_whole_segments(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=len(batch(10)))
    for _ in range(4):
        log.append(batch(10), now_ms=0)
    assert log.delete_records_before(15) == 15
    assert log.segment_base_offsets() == [10, 20, 30]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(14, 100)
    assert offsets_in(log.read(15, 1)) == [(10, 19)]  # whole batch; the client skips
    assert log.delete_records_before(3) == 15  # never moves backwards
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(41)
    assert log.delete_records_before(40) == 40  # everything; the active segment stays
    assert log.read(40, 100) == b"" and log.segment_base_offsets() == [30]
    log.close()


def test_log_start_offset_survives_restart(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(batch(10), now_ms=0)
    log.delete_records_before(7)
    log.close()
    reopened = open_log(tmp_path)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (7, 10)
    assert [r.offset for r in all_records(reopened)] == [7, 8, 9]
    reopened.close()


def test_retention_start_survives_restart(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=len(batch(10)), retention_bytes=0)
    for _ in range(3):
        log.append(batch(10), now_ms=0)
    assert log.apply_retention(0) == 2
    log.close()
    reopened = open_log(tmp_path)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (20, 30)
    reopened.close()


def test_segments_without_timestamps_age_by_file_time(tmp_path: Path) -> None:
    one = len(_records.encode_batch([_records.Record(0, -1, None, b"v")]))
    log = open_log(tmp_path, segment_bytes=one, retention_ms=1000)
    for _ in range(3):
        log.append(bytearray(_records.encode_batch([_records.Record(0, -1, None, b"v")])), now_ms=0)
    oldest = tmp_path / "t-0" / f"{0:020d}.log"
    modified_ms = int(oldest.stat().st_mtime * 1000)
    assert log.apply_retention(modified_ms + 500) == 0
    assert log.apply_retention(modified_ms + 5_000) == 2
    log.close()
