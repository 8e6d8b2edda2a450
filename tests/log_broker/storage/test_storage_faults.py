"""A failing disk gets KAFKA_STORAGE_ERROR, one log line per cause, and leaves no
record behind an error answer."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from batch_crafting import good, produce_body
from rawkafka import RawClient

from headrace.log_broker import Broker
from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import PartitionLog, StorageError, TopicConfig, _fsyncs, _index


def _disk_full(*_args: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def _open(tmp_path: Path) -> PartitionLog:
    # Small index interval: every batch gets an index entry, so index writes happen.
    config = TopicConfig.from_overrides({"index.interval.bytes": "1"})
    return PartitionLog.open(tmp_path / "t-0", "t", 0, config)


def _values(log: PartitionLog) -> list[bytes | None]:
    data = log.read(log.log_start_offset, 1 << 20)
    return [r.value for h in _records.scan_batches(data) for r in _records.decode_records(data, h)]


@pytest.mark.parametrize("failing", ["data", "offset index", "time index"])
def test_a_failed_write_leaves_nothing_visible(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failing: str,
) -> None:
    # Finding: an index write failing after the log write left the record in the log
    # behind an error answer, so the producer's retry stored it twice.
    log = _open(tmp_path)
    log.append(bytearray(good([b"a", b"b"])), now_ms=1)
    size = os.path.getsize(log.directory / "00000000000000000000.log")
    with monkeypatch.context() as patch, caplog.at_level(logging.ERROR):
        if failing == "data":
            patch.setattr(os, "pwrite", _disk_full)
        elif failing == "offset index":
            patch.setattr(_index.OffsetIndex, "write_pending", _disk_full)
        else:
            patch.setattr(_index.TimeIndex, "write_pending", _disk_full)
        for _ in range(3):
            with pytest.raises(StorageError) as refused:
                log.append(
                    bytearray(
                        good([b"c", b"d"], timestamp_type=_records.TimestampType.CREATE_TIME)
                    ),
                    now_ms=2,
                )
            assert refused.value.error_code == 56  # KAFKA_STORAGE_ERROR
            assert log.log_end_offset == 2
    assert os.path.getsize(log.directory / "00000000000000000000.log") == size
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "ENOSPC" in errors[0].getMessage()
    result = log.append(bytearray(good([b"c", b"d"])), now_ms=3)  # the retry, disk fixed
    assert result.base_offset == 2
    assert _values(log) == [b"a", b"b", b"c", b"d"]
    log.close()
    reopened = _open(tmp_path)
    assert _values(reopened) == [b"a", b"b", b"c", b"d"]
    reopened.close()


async def test_a_failed_fsync_is_answered_with_kafka_storage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Finding: a full disk gave UNKNOWN_SERVER_ERROR.
    async with Broker(tmp_path) as broker:

        def produce() -> int:
            client = RawClient(broker.bootstrap_servers)
            answer = client.request(0, 8, produce_body("disk", good()))
            client.close()
            return int(answer.responses[0].partition_responses[0].error_code)

        assert await asyncio.to_thread(produce) == 0
        monkeypatch.setattr(os, "fsync", _disk_full)
        monkeypatch.setattr(os, "fdatasync", _disk_full)
        if _fsyncs.compiled():  # the syncer's many-file fsync, in C, reports errnos
            monkeypatch.setattr(
                _fsyncs, "_compiled", lambda ops, _threads: [(errno.ENOSPC, 0.0, 0.0)] * len(ops)
            )
        assert await asyncio.to_thread(produce) == 56
        monkeypatch.undo()
        assert await asyncio.to_thread(produce) == 0


async def test_a_full_disk_while_creating_a_topic_is_a_storage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Finding: an uncaught OSError closed the connection, logged a traceback and left a
    # 0-byte .topics/*.json.tmp behind.
    real_write = os.write

    def write(fd: int, data: Any) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".json.tmp"):  # topic metadata
            _disk_full()
        return real_write(fd, data)

    async with Broker(tmp_path / "data") as broker:

        def produce(topic: str) -> int:
            with RawClient(broker.bootstrap_servers) as client:  # auto-creates the topic
                answer = client.request(0, 8, produce_body(topic, good()))
            return int(answer.responses[0].partition_responses[0].error_code)

        with monkeypatch.context() as patch, caplog.at_level(logging.ERROR):
            patch.setattr(os, "write", write)
            assert await asyncio.to_thread(produce, "full") == 56  # KAFKA_STORAGE_ERROR
            assert await asyncio.to_thread(produce, "fuller") == 56
        assert not list((tmp_path / "data").rglob("*.tmp"))
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1 and "No space left" in errors[0].getMessage()
        assert not errors[0].exc_info
        assert await asyncio.to_thread(produce, "full") == 0  # the disk has room again
