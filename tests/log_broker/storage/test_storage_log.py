from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from storage_batches import all_records, batch, offsets_in, open_log

from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import (
    CorruptRecordError,
    InvalidRecordError,
    LogClosedError,
    OffsetOutOfRangeError,
    PartitionLog,
    RecordTooLargeError,
)

# ------------------------------------------------------------------ append


def test_append_assigns_consecutive_offsets(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (0, 0, 0)
    first = log.append(batch(3) + batch(4), now_ms=0)
    second = log.append(batch(5, timestamp=7_000), now_ms=0)
    assert (first.base_offset, first.last_offset) == (0, 6)
    assert (second.base_offset, second.last_offset) == (7, 11)
    assert second.max_timestamp == 7_004 and second.log_append_time_ms == -1
    assert log.log_end_offset == 12
    assert [r.offset for r in all_records(log)] == list(range(12))
    log.close()


def test_stored_bytes_are_the_produced_bytes_with_offsets_set(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    payload = batch(3, tag=1) + batch(2, tag=2)
    produced = bytes(payload)
    log.append(payload, now_ms=0)
    log.append(batch(1), now_ms=0)  # patched in place: base offset 5
    stored = log.read(0, 1 << 20)
    assert stored[: len(produced)] == bytes(payload)
    first = _records.parse_batches(produced)[0]
    assert stored[8 : first.size] == produced[8 : first.size]  # only baseOffset differs
    assert offsets_in(stored) == [(0, 2), (3, 4), (5, 5)]
    assert log.size_bytes == len(stored)
    log.close()


def test_producer_base_offsets_are_overwritten(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    payload = batch(2)
    _records.patch_base_offset(payload, 0, 999)
    assert log.append(payload, now_ms=0).base_offset == 0
    assert offsets_in(log.read(0, 1000)) == [(0, 1)]
    log.close()


def test_compressed_batches_are_stored_as_is(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(batch(50, compression=_records.Compression.ZSTD), now_ms=0)
    data = log.read(10, 1 << 20)
    (header,) = _records.parse_batches(data)
    assert header.compression is _records.Compression.ZSTD
    assert [r.offset for r in _records.decode_records(data, header)] == list(range(50))
    log.close()


def test_a_bad_batch_anywhere_appends_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(batch(2), now_ms=0)
    payload = batch(2) + batch(2)
    payload[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        log.append(payload, now_ms=0)
    with pytest.raises(InvalidRecordError):
        log.append(bytearray(), now_ms=0)
    assert (log.log_end_offset, log.size_bytes) == (2, len(batch(2)))
    log.close()


def test_batches_above_max_message_bytes_are_refused(tmp_path: Path) -> None:
    log = open_log(tmp_path, max_message_bytes=500)
    with pytest.raises(RecordTooLargeError, match=r"max\.message\.bytes"):
        log.append(batch(2) + batch(30, value_size=30), now_ms=0)
    assert log.log_end_offset == 0 and log.size_bytes == 0
    assert log.append(batch(2), now_ms=0).base_offset == 0
    log.close()


def test_control_batches_only_when_allowed(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    marker = bytearray(
        _records.encode_control_batch(
            producer_id=1, producer_epoch=0, commit=True, coordinator_epoch=0, timestamp_ms=5
        )
    )
    with pytest.raises(InvalidRecordError, match="control"):
        log.append(bytearray(marker), now_ms=0)
    assert log.append(marker, now_ms=0, allow_control=True).base_offset == 0
    log.close()


def test_log_append_time_stamps_the_broker_clock(tmp_path: Path) -> None:
    log = open_log(tmp_path, message_timestamp_type="LogAppendTime")
    result = log.append(batch(3, timestamp=5), now_ms=123_456)
    assert result.log_append_time_ms == 123_456 and result.max_timestamp == 123_456
    data = log.read(0, 1000)
    (header,) = _records.parse_batches(data)  # CRC recomputed
    assert header.timestamp_type is _records.TimestampType.LOG_APPEND_TIME
    assert log.offset_for_timestamp(100_000) == (0, 123_456)
    log.close()


def test_closed_log_refuses_work(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.close()
    log.close()  # twice is harmless
    with pytest.raises(LogClosedError):
        log.append(batch(1), now_ms=0)
    with pytest.raises(LogClosedError):
        log.read(0, 10)


# ------------------------------------------------------------------ rolling


def test_segments_roll_by_size(tmp_path: Path) -> None:
    one = len(batch(10))
    log = open_log(tmp_path, segment_bytes=one * 3 + 1)
    for _ in range(10):
        log.append(batch(10), now_ms=0)
    assert log.segment_base_offsets() == [0, 30, 60, 90]
    assert sorted(p.name for p in (tmp_path / "t-0").glob("*.log")) == [
        f"{b:020d}.log" for b in (0, 30, 60, 90)
    ]
    assert [r.offset for r in all_records(log)] == list(range(100))
    log.close()


def test_an_oversized_payload_gets_a_segment_of_its_own(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=100)
    log.append(batch(1), now_ms=0)
    log.append(batch(20), now_ms=0)  # bigger than segment.bytes on its own
    log.append(batch(1), now_ms=0)
    assert log.segment_base_offsets() == [0, 1, 21]
    log.close()


def test_segments_roll_by_time(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_ms=1000)
    log.append(batch(1), now_ms=10_000)
    log.append(batch(1), now_ms=11_000)  # exactly segment.ms old: not yet
    assert log.segment_base_offsets() == [0]
    log.append(batch(1), now_ms=11_001)
    log.append(batch(1), now_ms=11_500)
    assert log.segment_base_offsets() == [0, 2]
    log.close()


def test_index_full_rolls_the_segment(tmp_path: Path) -> None:
    log = open_log(tmp_path, index_interval_bytes=0, segment_index_bytes=16)  # 2 entries
    for _ in range(5):
        log.append(batch(1), now_ms=0)
    # Entries start with the second batch; a segment rolls once it holds two.
    assert log.segment_base_offsets() == [0, 3]
    log.close()


# ------------------------------------------------------------------ reading


def test_read_limits_and_errors(tmp_path: Path) -> None:
    log = open_log(tmp_path, index_interval_bytes=0)
    size = len(batch(5))
    for _ in range(6):
        log.append(batch(5), now_ms=0)
    assert log.read(30, 100) == b""
    with pytest.raises(OffsetOutOfRangeError) as info:
        log.read(31, 100)
    assert (info.value.log_start_offset, info.value.log_end_offset) == (0, 30)
    assert offsets_in(log.read(7, 1)) == [(5, 9)]  # KIP-74: one whole batch
    assert offsets_in(log.read(7, size * 2 + size - 1)) == [(5, 9), (10, 14)]
    assert offsets_in(log.read(7, size * 3)) == [(5, 9), (10, 14), (15, 19)]
    assert offsets_in(log.read(0, 1 << 20, upper_bound=15)) == [(0, 4), (5, 9), (10, 14)]
    assert offsets_in(log.read(0, 1 << 20, upper_bound=16)) == [(0, 4), (5, 9), (10, 14), (15, 19)]
    assert log.read(15, 1 << 20, upper_bound=15) == b""
    assert offsets_in(log.read(12, 1, upper_bound=13)) == [(10, 14)]
    log.close()


def test_reads_stay_within_one_segment_and_continue_in_the_next(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=len(batch(4)) * 2)
    for _ in range(4):
        log.append(batch(4), now_ms=0)
    assert log.segment_base_offsets() == [0, 8]
    assert offsets_in(log.read(0, 1 << 20)) == [(0, 3), (4, 7)]
    assert offsets_in(log.read(8, 1 << 20)) == [(8, 11), (12, 15)]
    log.close()


class _Model:
    """Every batch of a single-segment log, for brute-force answers."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, int, int]] = []  # base, last, size

    def read(self, offset: int, max_bytes: int, upper_bound: int | None) -> list[tuple[int, int]]:
        chosen: list[tuple[int, int]] = []
        if upper_bound is not None and offset >= upper_bound:
            return chosen  # nothing readable at or past the bound
        used = 0
        for base, last, size in self.batches:
            if last < offset:
                continue
            if upper_bound is not None and base >= upper_bound:
                break
            if chosen and used + size > max_bytes:
                break
            chosen.append((base, last))
            used += size
        return chosen


@settings(max_examples=40, deadline=None)
@given(
    counts=st.lists(st.integers(1, 40), min_size=1, max_size=40),
    interval=st.sampled_from([0, 1, 200, 1000, 4096]),
    probes=st.lists(
        st.tuples(st.floats(0, 1), st.integers(1, 6000), st.one_of(st.none(), st.floats(0, 1.2))),
        min_size=1,
        max_size=25,
    ),
)
def test_reads_match_a_linear_scan(
    counts: list[int], interval: int, probes: list[tuple[float, int, float | None]]
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        log = open_log(Path(directory), index_interval_bytes=interval)
        model = _Model()
        for i, count in enumerate(counts):
            payload = batch(count, tag=i)
            size = len(payload)
            result = log.append(payload, now_ms=0)
            model.batches.append((result.base_offset, result.last_offset, size))
        end = log.log_end_offset
        for where, max_bytes, bound in probes:
            offset = min(int(where * end), end - 1)
            upper = None if bound is None else int(bound * end)
            assert offsets_in(log.read(offset, max_bytes, upper_bound=upper)) == model.read(
                offset, max_bytes, upper
            ), (offset, max_bytes, upper)
        log.close()


# ------------------------------------------------------------------ timestamps


@settings(max_examples=40, deadline=None)
@given(
    stamps=st.lists(
        st.lists(st.integers(0, 1000), min_size=1, max_size=8), min_size=1, max_size=30
    ),
    targets=st.lists(st.integers(-5, 1010), min_size=1, max_size=10),
    interval=st.sampled_from([0, 300, 4096]),
    segment_bytes=st.sampled_from([400, 1 << 20]),
)
def test_offset_for_timestamp_matches_brute_force(
    stamps: list[list[int]], targets: list[int], interval: int, segment_bytes: int
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        log = open_log(Path(directory), index_interval_bytes=interval, segment_bytes=segment_bytes)
        everything: list[tuple[int, int]] = []
        for batch_stamps in stamps:
            records = [_records.Record(i, ts, None, b"v") for i, ts in enumerate(batch_stamps)]
            base = log.append(bytearray(_records.encode_batch(records)), now_ms=0).base_offset
            everything += [(base + i, ts) for i, ts in enumerate(batch_stamps)]
        for target in targets:
            expected = next(((o, ts) for o, ts in everything if ts >= target), None)
            assert log.offset_for_timestamp(target) == expected, target
        log.close()


def test_offset_for_timestamp_ignores_deleted_records(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(batch(10, timestamp=100), now_ms=0)
    log.delete_records_before(4)
    assert log.offset_for_timestamp(0) == (4, 104)
    assert log.offset_for_timestamp(106) == (6, 106)
    assert log.offset_for_timestamp(110) is None
    log.close()


def test_state_is_exposed(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    assert isinstance(log, PartitionLog) and log.state.value == "open"
    assert (log.topic, log.partition) == ("t", 0)
    log.close()
    assert log.state.value == "closed"


@settings(max_examples=30, deadline=None)
@given(
    counts=st.lists(st.integers(1, 30), min_size=1, max_size=60),
    interval=st.sampled_from([0, 1, 150, 700, 4096]),
)
def test_index_lookup_at_and_between_entries_matches_a_linear_scan(
    counts: list[int], interval: int
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        log = open_log(Path(directory), index_interval_bytes=interval)
        for i, count in enumerate(counts):
            log.append(batch(count, tag=i), now_ms=0)
        (segment,) = log._segments
        linear = list(segment.walk(0))  # every batch, in order
        index = segment.offset_index
        if interval == 0:
            assert len(index) == len(linear) - 1  # every batch but the first
        entry_offsets = {segment.base_offset + o for o, _ in index.entries()}
        for offset in range(log.log_end_offset):
            holder = next(h for h in linear if h.base_offset <= offset <= h.last_offset)
            position, header = segment.find_position(offset)
            assert (position, header) == (holder.position, holder), offset
            # The index itself never points past the batch holding the offset, and at an
            # indexed offset it points exactly there.
            found = index.lookup(offset - segment.base_offset)
            assert found <= holder.position
            if offset in entry_offsets:
                assert found == holder.position
        log.close()
