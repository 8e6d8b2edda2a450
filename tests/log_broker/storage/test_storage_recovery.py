"""Opening a log after a clean close, after a crash, and with damaged files.

A crash is simulated by copying the directory of a log that is still open: the copy
has the bytes written so far and no clean-shutdown marker, as after a power cut that
lost nothing but the process.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from storage_batches import all_records, batch, open_log

from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import PartitionLog, TopicConfig
from headrace.log_broker.storage import _segment as segment_module
from headrace.log_broker.storage._recovery import CLEAN_SHUTDOWN_FILE
from headrace.log_broker.storage._segment import LogSegment


def _crash_image(log: PartitionLog, target: Path) -> PartitionLog:
    """Open a copy of an open log's directory, as the process would after a crash."""
    shutil.copytree(log.directory, target / "t-0")
    assert not (target / "t-0" / CLEAN_SHUTDOWN_FILE).exists()
    return PartitionLog.open(target / "t-0", "t", 0, log.config)


def _fill(log: PartitionLog, batches: int, count: int = 10) -> None:
    for i in range(batches):
        log.append(batch(count, timestamp=1_000 * i, tag=i), now_ms=0)


def _segment_file(log: PartitionLog, base: int, suffix: str = ".log") -> Path:
    return log.directory / f"{base:020d}{suffix}"


@pytest.fixture
def no_rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records the base offset of every segment rebuilt from its data."""
    rebuilt: list[int] = []
    original = LogSegment.rebuild

    def spy(self: LogSegment, *, verify: bool) -> int:
        rebuilt.append(self.base_offset)
        return original(self, verify=verify)

    monkeypatch.setattr(LogSegment, "rebuild", spy)
    return rebuilt


def test_clean_restart_keeps_offsets_bytes_and_skips_the_scan(
    tmp_path: Path, no_rebuilds: list[int]
) -> None:
    log = open_log(tmp_path, segment_bytes=len(batch(10)) * 3, index_interval_bytes=100)
    _fill(log, 8)
    before = {p.name: p.read_bytes() for p in log.directory.glob("0*")}
    everything = log.read(0, 1 << 30) + log.read(30, 1 << 30) + log.read(60, 1 << 30)
    log.close()
    assert (log.directory / CLEAN_SHUTDOWN_FILE).exists()

    reopened = open_log(tmp_path, segment_bytes=len(batch(10)) * 3, index_interval_bytes=100)
    assert no_rebuilds == []
    assert not (reopened.directory / CLEAN_SHUTDOWN_FILE).exists()
    assert reopened.segment_base_offsets() == [0, 30, 60]
    assert (reopened.log_end_offset, reopened.flushed_offset) == (80, 80)
    again = reopened.read(0, 1 << 30) + reopened.read(30, 1 << 30) + reopened.read(60, 1 << 30)
    assert again == everything
    assert {p.name: p.read_bytes() for p in reopened.directory.glob("0*")} == before
    assert reopened.offset_for_timestamp(5_000) == (50, 5_000)
    assert reopened.append(batch(1), now_ms=0).base_offset == 80
    reopened.close()


@pytest.mark.parametrize("chunk", [None, 300])
def test_torn_tail_is_cut_at_the_last_whole_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int | None
) -> None:
    if chunk is not None:  # make batches straddle the recovery read chunks
        monkeypatch.setattr(segment_module, "_RECOVERY_CHUNK", chunk)
    log = open_log(tmp_path / "live")
    _fill(log, 5)
    size = log.size_bytes
    image = tmp_path / "image"
    shutil.copytree(log.directory, image / "t-0")
    os.truncate(image / "t-0" / f"{0:020d}.log", size - 7)  # mid-way through batch 5
    crashed = PartitionLog.open(image / "t-0", "t", 0, log.config)
    assert crashed.log_end_offset == 40 and crashed.flushed_offset == 40
    assert os.path.getsize(image / "t-0" / f"{0:020d}.log") == size - len(batch(10))
    assert [r.offset for r in all_records(crashed)] == list(range(40))
    assert crashed.append(batch(2), now_ms=0).base_offset == 40
    crashed.close()
    log.close()


def test_garbage_after_the_tail_is_removed(tmp_path: Path) -> None:
    log = open_log(tmp_path / "live")
    _fill(log, 3)
    size = log.size_bytes
    with open(_segment_file(log, 0), "ab") as f:
        f.write(os.urandom(5000))
    crashed = _crash_image(log, tmp_path)
    assert crashed.log_end_offset == 30 and crashed.size_bytes == size
    assert os.path.getsize(_segment_file(crashed, 0)) == size
    crashed.close()
    log.close()


def test_corrupt_crc_in_the_last_batch_drops_it(tmp_path: Path) -> None:
    log = open_log(tmp_path / "live")
    _fill(log, 3)
    path = _segment_file(log, 0)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x55  # a value byte of the last record: only the CRC can tell
    path.write_bytes(data)
    crashed = _crash_image(log, tmp_path)
    assert crashed.log_end_offset == 20
    assert [r.offset for r in all_records(crashed)] == list(range(20))
    crashed.close()
    log.close()


def test_corruption_in_an_older_segment_drops_everything_after_it(tmp_path: Path) -> None:
    one = len(batch(10))
    log = open_log(tmp_path / "live", segment_bytes=one * 2)
    _fill(log, 6)  # segments 0, 20, 40
    path = _segment_file(log, 20)
    data = bytearray(path.read_bytes())
    data[one + 70] ^= 0xFF  # inside the second batch of segment 20
    path.write_bytes(data)
    crashed = _crash_image(log, tmp_path)
    assert crashed.segment_base_offsets() == [0, 20]
    assert crashed.log_end_offset == 30
    assert not _segment_file(crashed, 40).exists()
    crashed.close()
    log.close()


def test_after_a_sync_only_segments_past_the_recovery_point_are_scanned(
    tmp_path: Path, no_rebuilds: list[int]
) -> None:
    log = open_log(tmp_path / "live", segment_bytes=len(batch(10)) * 2)
    _fill(log, 5)  # segments 0, 20 and the active 40
    log.sync()
    _fill(log, 1)  # lands in segment 40 too
    crashed = _crash_image(log, tmp_path)
    assert no_rebuilds == [40]
    assert crashed.log_end_offset == 60
    crashed.close()
    log.close()


def test_without_a_sync_every_segment_is_scanned(tmp_path: Path, no_rebuilds: list[int]) -> None:
    log = open_log(tmp_path / "live", segment_bytes=len(batch(10)) * 2)
    _fill(log, 6)
    crashed = _crash_image(log, tmp_path)
    assert no_rebuilds == [0, 20, 40]
    crashed.close()
    log.close()


def test_lost_indexes_are_rebuilt(tmp_path: Path, no_rebuilds: list[int]) -> None:
    log = open_log(tmp_path, index_interval_bytes=0)
    _fill(log, 6)
    log.close()
    index = _segment_file(log, 0, ".index")
    time_index = _segment_file(log, 0, ".timeindex")
    saved = index.read_bytes(), time_index.read_bytes()
    index.unlink()
    time_index.unlink()
    reopened = open_log(tmp_path, index_interval_bytes=0)
    assert no_rebuilds == [0]
    assert (index.read_bytes(), time_index.read_bytes()) == saved
    assert reopened.offset_for_timestamp(3_000) == (30, 3_000)
    assert [r.offset for r in all_records(reopened)] == list(range(60))
    reopened.close()


def test_stale_index_entries_past_the_data_are_dropped(tmp_path: Path) -> None:
    log = open_log(tmp_path, index_interval_bytes=0)
    _fill(log, 6)
    log.close()
    # The data lost its last two batches but the index still names them.
    os.truncate(_segment_file(log, 0), len(batch(10)) * 4)
    reopened = open_log(tmp_path, index_interval_bytes=0)
    assert reopened.log_end_offset == 40
    assert [r.offset for r in all_records(reopened)] == list(range(40))
    assert os.path.getsize(_segment_file(log, 0, ".index")) == 3 * 8
    reopened.close()


def test_index_pointing_between_batches_is_rebuilt(tmp_path: Path, no_rebuilds: list[int]) -> None:
    log = open_log(tmp_path, index_interval_bytes=0)
    _fill(log, 4)
    log.close()
    index = _segment_file(log, 0, ".index")
    entries = bytearray(index.read_bytes())
    entries[-1] += 3  # last entry's position no longer a batch start
    index.write_bytes(entries)
    reopened = open_log(tmp_path, index_interval_bytes=0)
    assert no_rebuilds == [0]
    assert [r.offset for r in all_records(reopened)] == list(range(40))
    reopened.close()


def test_leftover_files_are_cleaned_up(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    _fill(log, 1)
    log.close()
    (log.directory / "log-start-offset.checkpoint.tmp").write_text("junk")
    (log.directory / f"{99:020d}.index").write_bytes(b"\x00" * 8)
    reopened = open_log(tmp_path)
    names = sorted(p.name for p in reopened.directory.iterdir())
    assert f"{99:020d}.index" not in names and not any(n.endswith(".tmp") for n in names)
    reopened.close()


def test_empty_directory_starts_at_zero_and_recovers_empty(tmp_path: Path) -> None:
    log = open_log(tmp_path / "live")
    crashed = _crash_image(log, tmp_path)
    assert (crashed.log_start_offset, crashed.log_end_offset) == (0, 0)
    crashed.close()
    log.close()


def test_reopen_with_log_append_time_segments(tmp_path: Path) -> None:
    config = {"message.timestamp.type": "LogAppendTime", "segment.bytes": "200"}
    log = PartitionLog.open(tmp_path / "t-0", "t", 0, TopicConfig.from_overrides(config))
    for now in (10, 20, 30):
        log.append(batch(3), now_ms=now)
    log.close()
    reopened = PartitionLog.open(tmp_path / "t-0", "t", 0, TopicConfig.from_overrides(config))
    assert reopened.offset_for_timestamp(15) == (3, 20)
    header = _records.parse_batches(reopened.read(6, 100))[0]
    assert header.max_timestamp == 30
    reopened.close()


def test_a_crash_that_loses_the_active_segments_unsynced_indexes_loses_nothing(
    tmp_path: Path,
) -> None:
    # A sync writes the active segment's data and not its indexes (``PartitionLog.sync``):
    # recovery rebuilds them from the data, so a crash image without them is whole.
    log = open_log(tmp_path / "live", segment_bytes=len(batch(10)) * 2, index_interval_bytes=0)
    _fill(log, 5)  # segments 0, 20 and the active 40
    log.sync()
    crashed_dir = tmp_path / "crashed"
    shutil.copytree(log.directory, crashed_dir / "t-0")
    for suffix in (".index", ".timeindex"):
        (crashed_dir / "t-0" / f"{40:020d}{suffix}").write_bytes(b"")
    crashed = PartitionLog.open(crashed_dir / "t-0", "t", 0, log.config)
    assert [r.offset for r in all_records(crashed)] == list(range(50))
    assert crashed.offset_for_timestamp(4_000) == (40, 4_000)
    crashed.close()
    log.close()


def test_sync_writes_the_active_segments_data_and_whole_segments_behind_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[tuple[str, str]] = []
    real_fsync, real_fdatasync = os.fsync, os.fdatasync

    def named(fd: int) -> str:
        return os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))

    def fsync(fd: int) -> None:
        synced.append(("fsync", named(fd)))
        real_fsync(fd)

    def fdatasync(fd: int) -> None:
        synced.append(("fdatasync", named(fd)))
        real_fdatasync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "fdatasync", fdatasync)
    log = open_log(tmp_path, segment_bytes=len(batch(10)) * 2)
    _fill(log, 1)
    synced.clear()
    log.sync()
    assert ("fdatasync", f"{0:020d}.log") in synced
    assert not any(name.startswith(f"{0:020d}.") and kind == "fsync" for kind, name in synced)
    _fill(log, 2)  # segment 0 fills up; 20 is active now
    synced.clear()
    log.sync()
    for suffix in (".log", ".index", ".timeindex"):
        assert ("fsync", f"{0:020d}{suffix}") in synced  # whole, before the point passes it
    assert ("fdatasync", f"{20:020d}.log") in synced
    assert (log.directory / "recovery-point.checkpoint").exists()
    log.close()
