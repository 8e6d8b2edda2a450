"""``PartitionLog.batch_headers``: the batches' headers without their bytes, across segments."""

from __future__ import annotations

from pathlib import Path

from storage_batches import batch, open_log


def test_headers_across_segments_within_the_limit_and_the_upper_bound(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=len(batch(10)) * 3)
    for i in range(10):
        log.append(batch(10, tag=i), now_ms=0)
    assert len(log.segment_base_offsets()) == 4
    every = log.batch_headers(0, 100, upper_bound=log.log_end_offset)
    assert [(h.base_offset, h.last_offset) for h in every] == [
        (10 * i, 10 * i + 9) for i in range(10)
    ]
    # From inside a batch: that batch first; at most ``limit``; none from the bound on.
    some = log.batch_headers(35, 4, upper_bound=100)
    assert [h.base_offset for h in some] == [30, 40, 50, 60]
    assert [h.base_offset for h in log.batch_headers(35, 100, upper_bound=60)] == [30, 40, 50]
    assert log.batch_headers(100, 10, upper_bound=200) == []
    log.close()
