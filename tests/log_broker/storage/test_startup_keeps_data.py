"""Start-up never drops data in silence: what it cannot use it sets aside, and says so
in an ERROR line naming what, where and how much."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from batch_crafting import good

from headrace.log_broker import Broker
from headrace.log_broker.storage import LogManager, PartitionLog, TopicConfig
from headrace.log_broker.storage._checkpoint import write_offset
from headrace.log_broker.storage._recovery import CLEAN_SHUTDOWN_FILE, RECOVERY_POINT_FILE
from headrace.transactions import ProducerIdAllocator
from headrace.transactions._errors import CorruptSnapshotError


def test_a_partition_directory_without_topic_metadata_is_moved_aside(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Finding: it was deleted (150k records) without a log line.
    manager = LogManager.open(tmp_path)
    manager.create_topic("orders", 1)
    log = manager.get_log("orders", 0)
    assert log is not None
    log.append(bytearray(good([b"a" * 1000])), now_ms=1)
    manager.close()
    data = (tmp_path / "orders-0" / "00000000000000000000.log").read_bytes()
    for meta in (tmp_path / ".topics").glob("*.json"):
        meta.unlink()
    with caplog.at_level(logging.ERROR):
        LogManager.open(tmp_path).close()
    kept = tmp_path / "stray-partitions" / "orders-0" / "00000000000000000000.log"
    assert kept.read_bytes() == data
    assert not (tmp_path / "orders-0").exists()
    message = caplog.records[-1].getMessage()
    assert "orders-0" in message and "no topic metadata" in message and "bytes" in message


def test_a_corrupt_batch_mid_segment_is_cut_but_its_tail_is_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Finding: recovery cut 93,300 acknowledged records without a log line.
    config = TopicConfig.from_overrides({})
    log = PartitionLog.open(tmp_path / "t-0", "t", 0, config)
    for i in range(10):
        log.append(bytearray(good([f"v{i}".encode()])), now_ms=1)
    log.close()
    segment = tmp_path / "t-0" / "00000000000000000000.log"
    raw = bytearray(segment.read_bytes())
    batch_size = len(raw) // 10
    raw[3 * batch_size + 70] ^= 0xFF  # inside batch 3's records: its CRC fails
    segment.write_bytes(raw)
    (tmp_path / "t-0" / CLEAN_SHUTDOWN_FILE).unlink()  # as after a crash
    with caplog.at_level(logging.ERROR):
        log = PartitionLog.open(tmp_path / "t-0", "t", 0, config)
    assert log.log_end_offset == 3
    quarantine = tmp_path / "t-0" / "00000000000000000000.log.quarantine"
    assert quarantine.read_bytes() == bytes(raw[3 * batch_size :])
    message = caplog.records[-1].getMessage()
    assert str(segment) in message and f"{7 * batch_size} bytes" in message
    assert str(quarantine) in message
    log.close()


def test_a_corrupt_producer_id_file_is_named(tmp_path: Path) -> None:
    # Finding: start-up stopped without naming the file.
    path = tmp_path / "producer_ids"
    path.write_bytes(b"\x00garbage")
    with pytest.raises(CorruptSnapshotError, match=r"producer id file .*producer_ids"):
        ProducerIdAllocator(path)


async def test_the_broker_names_a_corrupt_producer_id_file(tmp_path: Path) -> None:
    async with Broker(tmp_path):
        pass
    (tmp_path / "producer_ids").write_text("not a number")
    with pytest.raises(CorruptSnapshotError, match=re.escape(str(tmp_path / "producer_ids"))):
        async with Broker(tmp_path):
            pass


def test_segments_after_a_cut_are_set_aside_not_deleted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = TopicConfig.from_overrides({"segment.bytes": "200"})  # a segment per batch
    log = PartitionLog.open(tmp_path / "t-0", "t", 0, config)
    for i in range(4):
        log.append(bytearray(good([f"value-{i}".encode() * 8])), now_ms=1)
    log.close()
    directory = tmp_path / "t-0"
    segments = sorted(directory.glob("*.log"))
    assert len(segments) == 4
    raw = bytearray(segments[1].read_bytes())
    raw[70] ^= 0xFF
    segments[1].write_bytes(raw)
    (directory / CLEAN_SHUTDOWN_FILE).unlink()
    write_offset(directory / RECOVERY_POINT_FILE, 0)  # as if nothing had been synced
    later = {path.name: path.read_bytes() for path in segments[2:]}
    with caplog.at_level(logging.ERROR):
        log = PartitionLog.open(directory, "t", 0, config)
    assert log.log_end_offset == 1
    for name, data in later.items():
        assert (directory / (name + ".quarantine")).read_bytes() == data
        assert any(name in r.getMessage() and "set aside" in r.getMessage() for r in caplog.records)
    log.close()


def _filled_log(directory: Path, batches: int, segment_bytes: int = 20_000) -> None:
    config = TopicConfig.from_overrides({"segment.bytes": str(segment_bytes)})
    log = PartitionLog.open(directory, "t", 0, config)
    for i in range(batches):
        log.append(bytearray(good([f"{i}".encode() * 500])), now_ms=1)
    log.close()


def test_a_segment_missing_while_its_indexes_remain_is_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Finding: 100,000 records became a high watermark of 0 with no log line.
    _filled_log(tmp_path / "t-0", 100, segment_bytes=1 << 30)
    (tmp_path / "t-0" / "00000000000000000000.log").unlink()
    with caplog.at_level(logging.ERROR):
        log = PartitionLog.open(tmp_path / "t-0", "t", 0, TopicConfig.from_overrides({}))
    log.close()
    [message] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert "00000000000000000000.log is missing" in message
    assert "records from offset 0 are lost" in message
    assert (tmp_path / "t-0" / "00000000000000000000.index.quarantine").stat().st_size > 0


def test_indexes_left_by_an_interrupted_front_removal_go_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Retention unlinks a segment's data before its indexes: a crash in between leaves
    indexes below the first segment, which name nothing lost."""
    _filled_log(tmp_path / "t-0", 100)
    bases = sorted(p.stem for p in (tmp_path / "t-0").glob("*.log"))
    assert len(bases) > 2
    (tmp_path / "t-0" / f"{bases[0]}.log").unlink()
    with caplog.at_level(logging.ERROR):
        log = PartitionLog.open(tmp_path / "t-0", "t", 0, TopicConfig.from_overrides({}))
    log.close()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not list((tmp_path / "t-0").glob(f"{bases[0]}.*"))


async def test_a_new_data_directory_is_the_brokers_alone(tmp_path: Path) -> None:
    async with Broker(tmp_path / "data"):
        pass
    assert (tmp_path / "data").stat().st_mode & 0o777 == 0o700


def test_a_segment_missing_between_two_others_is_named_with_its_range(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _filled_log(tmp_path / "t-0", 100)
    bases = sorted(int(p.stem) for p in (tmp_path / "t-0").glob("*.log"))
    assert len(bases) > 2
    (tmp_path / "t-0" / f"{bases[1]:020d}.log").unlink()
    with caplog.at_level(logging.ERROR):
        log = PartitionLog.open(tmp_path / "t-0", "t", 0, TopicConfig.from_overrides({}))
    log.close()
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert f"records from offset {bases[1]} to {bases[2] - 1} are lost" in messages[0]
