"""Log compaction: what the cleaner keeps, when it runs, and what it leaves alone."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from compaction_helpers import compacted_log, expected_after_clean, keyed, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from storage_batches import all_records, open_log

from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import InvalidRecordError, LogManager, PartitionLog, TopicConfig
from headrace.log_broker.storage import _retain as retain_module
from headrace.log_broker.storage._cleaner import Cleaner, clean_log, plan
from headrace.log_broker.storage._cleaner_checkpoint import (
    CLEANER_CHECKPOINT_FILE,
    MAX_MARKS,
    CleanerCheckpoint,
    read_checkpoint,
    write_checkpoint,
)

DAY = 86_400_000


def _clean(log: PartitionLog, now_ms: int = 10_000) -> int:
    return len(Cleaner().run([log], now_ms))


def _fill(log: PartitionLog, batches: int, keys: int, *, roll: bool = True) -> None:
    """``batches`` batches of 3 records over ``keys`` keys, values naming their batch;
    then a roll, so every batch sits in a closed segment."""
    for i in range(batches):
        pairs = [(f"k{(3 * i + j) % keys}".encode(), f"v{i}.{j}".encode()) for j in range(3)]
        log.append(keyed(pairs, timestamp=1_000 + i), now_ms=0)
    if roll:
        log.roll(0)


def test_latest_value_per_key_survives_at_its_original_offset(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, segment_bytes=400)
    _fill(log, 30, keys=7)
    before = snapshot(log)
    end = log.log_end_offset
    assert len(log.segment_base_offsets()) > 5

    assert _clean(log) == 1

    after = snapshot(log)
    assert after == expected_after_clean(before, end)
    assert {r[2] for r in after} == {f"k{i}".encode() for i in range(7)}
    assert log.log_end_offset == end
    assert log.append(keyed([(b"k0", b"new")]), now_ms=0).base_offset == end
    log.close()
    reopened = compacted_log(tmp_path, segment_bytes=400)
    assert snapshot(reopened)[:-1] == after
    reopened.close()


def test_a_second_pass_compacts_new_data_against_old(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, segment_bytes=400)
    _fill(log, 10, keys=4)
    _clean(log)
    log.append(keyed([(b"k1", b"newest"), (b"k2", None)]), now_ms=0)
    log.roll(0)
    before = snapshot(log)
    assert _clean(log) == 1
    assert snapshot(log) == expected_after_clean(before, log.log_end_offset)
    values = {r[2]: r[3] for r in snapshot(log)}
    assert values[b"k1"] == b"newest" and values[b"k2"] is None
    checkpoint = read_checkpoint(log.directory / CLEANER_CHECKPOINT_FILE)
    assert checkpoint.first_dirty_offset == log.log_end_offset
    log.close()


def test_the_active_segment_is_never_cleaned(tmp_path: Path) -> None:
    log = compacted_log(tmp_path)  # one big segment: everything stays active
    _fill(log, 10, keys=2, roll=False)
    before = snapshot(log)
    assert _clean(log) == 0
    assert snapshot(log) == before
    log.close()


def test_tombstones_expire_delete_retention_ms_after_their_first_pass(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=DAY)
    log.append(keyed([(b"a", b"1"), (b"b", b"1")]), now_ms=0)
    log.append(keyed([(b"a", None)]), now_ms=0)
    log.roll(0)

    def pass_at(now_ms: int) -> list[tuple[bytes | None, bytes | None]]:
        log.append(keyed([(b"filler", b"x")]), now_ms=0)  # something dirty to clean
        log.roll(0)
        assert _clean(log, now_ms) == 1
        return [(r[2], r[3]) for r in snapshot(log) if r[2] != b"filler"]

    t0 = 5_000_000
    assert pass_at(t0) == [(b"b", b"1"), (b"a", None)]  # first pass: the clock starts
    assert pass_at(t0 + DAY - 1) == [(b"b", b"1"), (b"a", None)]
    assert pass_at(t0 + DAY) == [(b"b", b"1")]
    # A tombstone written after the first pass waits for its own first pass.
    log.append(keyed([(b"b", None)]), now_ms=0)
    assert pass_at(t0 + DAY + 1) == [(b"b", None)]
    assert pass_at(t0 + 2 * DAY) == [(b"b", None)]
    assert pass_at(t0 + 2 * DAY + 1) == []
    log.close()


def test_zero_delete_retention_still_keeps_a_tombstone_for_one_pass(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=0)
    log.append(keyed([(b"a", b"1"), (b"a", None)]), now_ms=0)
    log.roll(0)
    _clean(log, 100)
    assert [(r[2], r[3]) for r in snapshot(log)] == [(b"a", None)]
    log.append(keyed([(b"z", b"1")]), now_ms=0)
    log.roll(0)
    _clean(log, 100)
    assert [(r[2], r[3]) for r in snapshot(log)] == [(b"z", b"1")]
    log.close()


def test_min_compaction_lag_keeps_young_segments_out_of_the_pass(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, min_compaction_lag_ms=60_000)
    log.append(keyed([(b"a", b"old"), (b"a", b"older")], timestamp=1_000), now_ms=0)
    log.roll(0)
    log.append(keyed([(b"a", b"young"), (b"a", b"younger")], timestamp=100_000), now_ms=0)
    log.roll(0)
    before = snapshot(log)
    # At 120s the second segment's records are 20s old: only the first may be compacted.
    assert _clean(log, 120_000) == 1
    assert [r[3] for r in snapshot(log)] == [b"older", b"young", b"younger"]
    assert _clean(log, 159_000) == 0  # still too young
    assert _clean(log, 160_002) == 1
    assert [r[3] for r in snapshot(log)] == [b"younger"]
    assert snapshot(log)[0][0] == before[-1][0]
    log.close()


def test_dirty_ratio_decides_which_logs_are_cleaned_and_in_which_order(tmp_path: Path) -> None:
    config = TopicConfig.from_overrides(
        {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.5"}
    )
    logs = {
        name: PartitionLog.open(tmp_path / f"{name}-0", name, 0, config)
        for name in ("low", "mid", "high")
    }
    for log in logs.values():
        _fill(log, 20, keys=60)  # distinct keys: cleaning keeps all of it
        assert plan(log, 10_000) is not None  # never cleaned: all dirty
    assert len(Cleaner().run(logs.values(), 10_000)) == 3
    assert all(plan(log, 10_000) is None for log in logs.values())
    for name, batches in (("low", 2), ("mid", 30), ("high", 80)):
        _fill(logs[name], batches, keys=60)
    ratios = {name: getattr(plan(log, 10_000), "dirty_ratio", None) for name, log in logs.items()}
    assert ratios["low"] is None
    assert 0.5 < ratios["mid"] < ratios["high"] < 1  # type: ignore[operator]
    cleaned = Cleaner().run(logs.values(), 10_000)
    assert [s.topic for s in cleaned] == ["high", "mid"]
    for log in logs.values():
        log.close()


def test_max_compaction_lag_forces_a_pass_below_the_dirty_ratio(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, min_cleanable_dirty_ratio=0.9, max_compaction_lag_ms=50_000)
    _fill(log, 20, keys=20)
    _clean(log, 10_000)
    _fill(log, 2, keys=20)  # timestamps about 1_000
    assert plan(log, 50_000) is None
    assert plan(log, 52_000) is not None
    log.close()


@pytest.mark.parametrize("codec", list(_records.Compression))
def test_compressed_batches_are_read_and_rewritten_with_their_codec(
    tmp_path: Path, codec: _records.Compression
) -> None:
    log = compacted_log(tmp_path)
    log.append(keyed([(b"a", b"1"), (b"b", b"1"), (b"c", b"1")], compression=codec), now_ms=0)
    log.append(keyed([(b"a", b"2"), (b"d", b"2")], compression=codec), now_ms=0)
    log.roll(0)
    _clean(log)
    data = log.read(0, 1 << 20)
    headers = _records.parse_batches(bytearray(data))  # checks every CRC
    assert [h.compression for h in headers] == [codec, codec]
    assert [(h.base_offset, h.last_offset_delta, h.records_count) for h in headers] == [
        (0, 2, 2),
        (3, 1, 2),
    ]
    assert [(r.offset, r.key, r.value) for r in all_records(log)] == [
        (1, b"b", b"1"),
        (2, b"c", b"1"),
        (3, b"a", b"2"),
        (4, b"d", b"2"),
    ]
    log.close()


def test_a_batch_that_keeps_everything_is_copied_byte_for_byte(tmp_path: Path) -> None:
    log = compacted_log(tmp_path)
    log.append(keyed([(b"a", b"1")], compression=_records.Compression.ZSTD), now_ms=0)
    log.append(keyed([(b"b", b"1"), (b"c", b"1")], compression=_records.Compression.LZ4), now_ms=0)
    log.roll(0)
    before = log.read(0, 1 << 20)
    _clean(log)
    assert log.read(0, 1 << 20) == before
    log.close()


def test_log_append_time_batches_keep_their_timestamp(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, message_timestamp_type="LogAppendTime")
    log.append(keyed([(b"a", b"1"), (b"b", b"1")]), now_ms=777_000)
    log.append(keyed([(b"a", b"2")]), now_ms=888_000)
    log.roll(0)
    _clean(log)
    header = _records.parse_batches(bytearray(log.read(0, 1 << 20)))[0]
    assert header.timestamp_type is _records.TimestampType.LOG_APPEND_TIME
    assert [(r[0], r[1]) for r in snapshot(log)] == [(1, 777_000), (2, 888_000)]
    assert log.offset_for_timestamp(800_000) == (2, 888_000)
    log.close()


def test_compact_delete_also_applies_retention(tmp_path: Path) -> None:
    # Segments too big to merge: a merged segment would carry the newer timestamps.
    log = compacted_log(
        tmp_path, cleanup_policy="compact,delete", retention_ms=DAY, segment_bytes=100
    )
    log.append(keyed([(b"a", b"1"), (b"a", b"2")], timestamp=1_000), now_ms=0)
    log.roll(0)
    log.append(keyed([(b"b", b"1"), (b"b", b"2")], timestamp=2 * DAY), now_ms=0)
    log.roll(0)
    _clean(log, 2 * DAY)
    assert [r[3] for r in snapshot(log)] == [b"2", b"2"]
    assert log.apply_retention(2 * DAY) == 1  # the first segment is older than a day
    assert [(r[2], r[3]) for r in snapshot(log)] == [(b"b", b"2")]
    log.close()


def test_compacted_topics_refuse_records_without_a_key(tmp_path: Path) -> None:
    log = compacted_log(tmp_path)
    for codec in (_records.Compression.NONE, _records.Compression.GZIP):
        with pytest.raises(InvalidRecordError, match="without key") as refused:
            log.append(keyed([(b"a", b"1"), (None, b"2")], compression=codec), now_ms=0)
        assert refused.value.error_code == 87 and not refused.value.retriable
    assert log.log_end_offset == 0
    plain = open_log(tmp_path / "plain")
    assert plain.append(keyed([(None, b"1")]), now_ms=0).base_offset == 0
    plain.close()
    log.close()


def test_each_producers_last_batch_survives_as_an_empty_batch(tmp_path: Path) -> None:
    log = compacted_log(tmp_path)
    log.append(keyed([(b"a", b"1")], producer_id=3), now_ms=0)
    log.append(keyed([(b"a", b"2"), (b"b", b"2")], producer_id=3), now_ms=0)
    log.append(keyed([(b"a", b"3"), (b"b", b"3")]), now_ms=0)
    log.roll(0)
    _clean(log)
    headers = _records.parse_batches(bytearray(log.read(0, 1 << 20)))
    assert [
        (h.base_offset, h.last_offset_delta, h.records_count, h.producer_id) for h in headers
    ] == [(1, 1, 0, 3), (3, 1, 2, -1)]
    assert [r[0] for r in snapshot(log)] == [3, 4]
    log.close()


def test_reads_and_appends_go_on_while_a_pass_rewrites(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, segment_bytes=400)
    _fill(log, 20, keys=5)
    before = snapshot(log)
    end = log.log_end_offset
    inside, release = threading.Event(), threading.Event()
    original = retain_module.retained

    def slow_retained(*args: object, **kwargs: object) -> object:
        inside.set()
        assert release.wait(10)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    retain_module.retained = slow_retained  # type: ignore[assignment]  # a slower stand-in
    import headrace.log_broker.storage._rewrite as rewrite_module

    rewrite_module.retained = slow_retained  # type: ignore[attr-defined, assignment]  # the same stand-in
    try:
        worker = threading.Thread(target=_clean, args=(log,))
        worker.start()
        assert inside.wait(10)
        # The pass is mid-rewrite: the log's lock must be free for appends and reads.
        for i in range(5):
            result = log.append(keyed([(b"k0", f"during{i}".encode())]), now_ms=0)
            assert result.base_offset == end + i
        assert snapshot(log) == before + [
            (end + i, 1_000, b"k0", f"during{i}".encode()) for i in range(5)
        ]
        release.set()
        worker.join(10)
        assert not worker.is_alive()
    finally:
        retain_module.retained = original
        rewrite_module.retained = original  # type: ignore[attr-defined]
    after = snapshot(log)
    assert after == expected_after_clean(before, end) + [
        (end + i, 1_000, b"k0", f"during{i}".encode()) for i in range(5)
    ]
    log.close()


def test_retention_removing_a_source_mid_pass_aborts_the_swap(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, cleanup_policy="compact,delete", retention_ms=DAY)
    _fill(log, 6, keys=2)
    found = plan(log, 10_000)
    assert found is not None
    log.delete_records_before(log.log_end_offset)  # every closed segment goes
    before = snapshot(log)
    assert clean_log(log, found, 10_000) is None
    assert snapshot(log) == before
    assert not list(log.directory.glob("*.cleaned")) and not list(log.directory.glob("*.swap"))
    log.close()


def test_a_closed_or_deleted_log_is_skipped(tmp_path: Path) -> None:
    log = compacted_log(tmp_path)
    _fill(log, 4, keys=2)
    found = plan(log, 10_000)
    assert found is not None
    log.delete()
    assert clean_log(log, found, 10_000) is None
    assert plan(log, 10_000) is None


def test_log_manager_cleans_compacted_topics_only(tmp_path: Path) -> None:
    manager = LogManager.open(tmp_path)
    manager.create_topic("c", 1, {"cleanup.policy": "compact", "segment.bytes": "200"})
    manager.create_topic("d", 1, {"segment.bytes": "200"})
    for name in ("c", "d"):
        log = manager.get_log(name, 0)
        assert log is not None
        _fill(log, 8, keys=2)
    assert manager.run_compaction(10_000) == 1
    sizes = {name: len(snapshot(manager.get_log(name, 0))) for name in ("c", "d")}  # type: ignore[arg-type]
    assert sizes == {"c": 2, "d": 24}
    manager.close()


def test_cleaner_checkpoint_marks_merge_once_spent_and_stay_bounded(tmp_path: Path) -> None:
    checkpoint = CleanerCheckpoint()
    checkpoint = checkpoint.after_pass(10, now_ms=100, delete_retention_ms=50)
    checkpoint = checkpoint.after_pass(20, now_ms=120, delete_retention_ms=50)
    assert checkpoint.marks == ((10, 100), (20, 120))
    assert [checkpoint.first_cleaned_at(o) for o in (0, 9, 10, 19, 20)] == [
        100,
        100,
        120,
        120,
        None,
    ]
    checkpoint = checkpoint.after_pass(30, now_ms=200, delete_retention_ms=50)
    assert checkpoint.marks == ((20, 120), (30, 200))
    assert checkpoint.first_dirty_offset == 30
    for i in range(2 * MAX_MARKS):
        checkpoint = checkpoint.after_pass(40 + i, now_ms=300 + i, delete_retention_ms=10**9)
    assert len(checkpoint.marks) == MAX_MARKS
    # Merging only ever makes a tombstone wait longer.
    assert checkpoint.first_cleaned_at(35) is not None and checkpoint.first_cleaned_at(35) >= 200  # type: ignore[operator]
    path = tmp_path / CLEANER_CHECKPOINT_FILE
    write_checkpoint(path, checkpoint)
    assert read_checkpoint(path) == checkpoint
    path.write_text("1\nnot a number\n")
    assert read_checkpoint(path) == CleanerCheckpoint()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(
            st.lists(
                st.tuples(
                    st.sampled_from([b"a", b"b", b"c", b"d"]),
                    st.one_of(st.none(), st.binary(max_size=8)),
                ),
                min_size=1,
                max_size=4,
            ),
            st.sampled_from(list(_records.Compression)),
            st.booleans(),
        ),
        min_size=1,
        max_size=25,
    ),
    st.integers(min_value=150, max_value=600),
)
def test_any_log_compacts_like_the_brute_force_model(
    tmp_path_factory: pytest.TempPathFactory,
    batches: list[tuple[list[tuple[bytes, bytes | None]], _records.Compression, bool]],
    segment_bytes: int,
) -> None:
    log = compacted_log(tmp_path_factory.mktemp("model"), segment_bytes=segment_bytes)
    for pairs, codec, roll in batches:
        log.append(keyed(pairs, compression=codec), now_ms=0)
        if roll:
            log.roll(0)
    before = snapshot(log)
    closed_end = log.segment_base_offsets()[-1]
    _clean(log)
    assert snapshot(log) == expected_after_clean(before, closed_end)
    log.close()
