"""One partition the cleaner cannot clean never stops it cleaning the others."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from batch_crafting import LAST_OFFSET_DELTA_AT, with_field
from compaction_helpers import compacted_log, keyed

from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import PartitionLog, _log
from headrace.log_broker.storage._cleaner import Cleaner, plan


def _fill(log: PartitionLog, batches: int) -> None:
    for i in range(batches):
        log.append(keyed([(b"k", f"v{i}".encode())]), now_ms=0)
    log.roll(0)


def _store_unchecked(log: PartitionLog, batch: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """Store a batch the way a broker without record checks did (data written then)."""
    with monkeypatch.context() as patch:
        patch.setattr(_log, "validate_batches", lambda *args: None)
        log.append(bytearray(batch), now_ms=0)


def test_a_failing_partition_is_logged_counted_and_backed_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    broken = compacted_log(tmp_path / "a")
    healthy = compacted_log(tmp_path / "b")
    # Finding: a keyed batch whose offset deltas run past lastOffsetDelta made the
    # cleaner raise outside its per-log handling, and every pass stopped there.
    records = [_records.Record(0, 1, b"k", b"x"), _records.Record(7, 2, b"k", b"y")]
    gap = with_field(
        _records.encode_batch(records, last_offset_delta=7), LAST_OFFSET_DELTA_AT, ">i", 1
    )
    _store_unchecked(broken, gap, monkeypatch)
    _fill(broken, 5)
    _fill(healthy, 5)
    cleaner = Cleaner(retry_backoff_ms=1_000)
    with caplog.at_level(logging.ERROR, "headrace.broker.cleaner"):
        cleaned = cleaner.run([broken, healthy], 10_000)
    assert [(s.topic, s.partition) for s in cleaned] == [("t", 0)]
    assert cleaned[0] is not None and plan(healthy, 10_000) is None  # healthy got cleaned
    assert cleaner.failures == 1
    assert "cannot clean t-0" in caplog.text and "tried again in 1000 ms" in caplog.text
    # Backed off: not tried again within the wait, tried (and failing, twice as long
    # a wait) after it.
    assert cleaner.run([broken], 10_500) == [] and cleaner.failures == 1
    cleaner.run([broken], 11_000)
    assert cleaner.failures == 2 and "tried again in 2000 ms" in caplog.text
    broken.close()
    healthy.close()
