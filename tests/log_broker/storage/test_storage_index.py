"""The sparse indexes answer as a whole array in memory would, across many pages, and keep
only a bounded part of themselves in memory."""

from __future__ import annotations

import random
from bisect import bisect_left, bisect_right
from pathlib import Path

import pytest
from storage_batches import batch, offsets_in, open_log

from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import _index
from headrace.log_broker.storage._index import PAGE, OffsetIndex, TimeIndex


def _offset_entries(count: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    entries, offset, position = [], 0, 0
    for _ in range(count):
        offset += rng.randint(1, 50)
        position += rng.randint(1, 5000)
        entries.append((offset, position))
    return entries


def _lookup(entries: list[tuple[int, int]], relative_offset: int) -> int:
    i = bisect_right([o for o, _ in entries], relative_offset)
    return entries[i - 1][1] if i else 0


def _boundary(entries: list[tuple[int, int]], position: int, relative_offset: int) -> int:
    i = min(
        bisect_right([p for _, p in entries], position),
        bisect_right([o for o, _ in entries], relative_offset),
    )
    return entries[i - 1][1] if i else 0


def _filled(path: Path, entries: list[tuple[int, int]]) -> OffsetIndex:
    """An offset index of ``entries``, written."""
    index = OffsetIndex(path)
    for offset, position in entries:
        index.append(offset, position)
    index.write_pending()
    return index


def _held_in_memory(index: _index._PagedIndex) -> int:
    """Entries the index holds in memory: its summary and its tail."""
    return len(index._first_keys) + len(index._tail_keys)


def _check_offsets(index: OffsetIndex, entries: list[tuple[int, int]], rng: random.Random) -> None:
    assert len(index) == len(entries)
    assert index.last() == (entries[-1] if entries else None)
    top_offset = entries[-1][0] + 60 if entries else 60
    top_position = entries[-1][1] + 6000 if entries else 6000
    probes = [o for o, _ in entries[:: max(1, len(entries) // 200)]]
    probes += [rng.randint(0, top_offset) for _ in range(200)] + [0, top_offset]
    for relative in probes:
        for candidate in (relative - 1, relative, relative + 1):
            assert index.lookup(candidate) == _lookup(entries, candidate), candidate
    for _ in range(200):
        position, relative = rng.randint(0, top_position), rng.randint(0, top_offset)
        assert index.boundary_before(position, relative) == _boundary(entries, position, relative)


@pytest.mark.parametrize("count", [0, 1, PAGE - 1, PAGE, PAGE + 1, 5 * PAGE, 5 * PAGE + 17])
def test_offset_index_answers_as_a_whole_array_would(tmp_path: Path, count: int) -> None:
    rng = random.Random(count)
    entries = _offset_entries(count, seed=count)
    index = OffsetIndex(tmp_path / "0.index")
    for i, (offset, position) in enumerate(entries):
        index.append(offset, position)
        if i % 7 == 0:  # appends land in memory first and are written per append call
            index.write_pending()
    index.write_pending()
    _check_offsets(index, entries, rng)
    assert index.entries() == entries
    # The file is the whole index, in Kafka's layout.
    assert (tmp_path / "0.index").read_bytes() == b"".join(
        _index._OFFSET_ENTRY.pack(*e) for e in entries
    )
    # Read back as a reopened segment does.
    index.close()
    reopened = OffsetIndex(tmp_path / "0.index")
    assert reopened.load(data_size=2**31)
    _check_offsets(reopened, entries, rng)
    reopened.close()


def test_memory_holds_a_summary_and_the_last_page_only(tmp_path: Path) -> None:
    entries = _offset_entries(40 * PAGE, seed=1)
    index = OffsetIndex(tmp_path / "0.index")
    for offset, position in entries:
        index.append(offset, position)
        index.write_pending()
        assert _held_in_memory(index) <= PAGE + len(index) // PAGE + 1
    assert _held_in_memory(index) <= PAGE + 41
    index.close()
    reopened = OffsetIndex(tmp_path / "0.index")
    assert reopened.load(data_size=2**31)
    assert _held_in_memory(reopened) <= PAGE + 41
    reopened.close()


@pytest.mark.parametrize("keep", [0, 1, PAGE - 1, PAGE, PAGE + 1, 3 * PAGE + 5, 4 * PAGE])
def test_discarding_entries_moves_the_tail_back_into_the_file(tmp_path: Path, keep: int) -> None:
    """A failed append is undone entry-exactly, even when the entries kept end in a page
    that memory no longer holds; appends then carry on from there."""
    rng = random.Random(keep)
    entries = _offset_entries(4 * PAGE + 100, seed=keep)
    index = _filled(tmp_path / "0.index", entries)
    index.discard_after(keep)
    kept = entries[:keep]
    _check_offsets(index, kept, rng)
    assert (tmp_path / "0.index").stat().st_size == keep * 8
    more = [(o + 10**6, p + 10**8) for o, p in _offset_entries(PAGE + 3, seed=99)]
    for offset, position in more:
        index.append(offset, position)
    index.write_pending()
    _check_offsets(index, kept + more, rng)
    assert index.entries() == kept + more
    index.close()


def test_pending_entries_discarded_before_they_are_written(tmp_path: Path) -> None:
    entries = _offset_entries(2 * PAGE + 10, seed=3)
    index = _filled(tmp_path / "0.index", entries[: PAGE + 3])
    for offset, position in entries[PAGE + 3 :]:
        index.append(offset, position)  # a whole page more, not written yet
    index.discard_after(PAGE + 3)
    _check_offsets(index, entries[: PAGE + 3], random.Random(3))
    assert (tmp_path / "0.index").stat().st_size == (PAGE + 3) * 8
    index.close()


def test_load_drops_entries_past_the_data(tmp_path: Path) -> None:
    entries = _offset_entries(3 * PAGE, seed=4)
    _filled(tmp_path / "0.index", entries).close()
    cut = entries[PAGE + 10][1]  # the data ends where this entry would point
    reopened = OffsetIndex(tmp_path / "0.index")
    assert reopened.load(data_size=cut)
    _check_offsets(reopened, entries[: PAGE + 10], random.Random(4))
    assert (tmp_path / "0.index").stat().st_size == (PAGE + 10) * 8
    reopened.close()


def test_time_index_answers_as_a_whole_array_would(tmp_path: Path) -> None:
    rng = random.Random(5)
    entries, timestamp, offset = [], 1_700_000_000_000, 0
    index = TimeIndex(tmp_path / "0.timeindex")
    for _ in range(6 * PAGE + 9):
        timestamp += rng.randint(1, 1000)
        offset += rng.randint(0, 30)
        index.maybe_append(timestamp, offset)
        index.maybe_append(timestamp - 1, offset + 1)  # not a new largest: ignored
        entries.append((timestamp, offset))
        index.write_pending()
    stamps = [t for t, _ in entries]

    def expected(ts: int) -> int:
        i = bisect_left(stamps, ts)
        return entries[i - 1][1] if i else 0

    reopened = TimeIndex(tmp_path / "0.timeindex")
    assert reopened.load(offset + 1)
    for index_now in (index, reopened):
        assert index_now.last_timestamp == timestamp
        assert index_now.last() == entries[-1]
        for ts in [rng.randint(stamps[0] - 10, stamps[-1] + 10) for _ in range(500)] + stamps:
            assert index_now.lookup(ts) == expected(ts), ts
            assert index_now.lookup(ts + 1) == expected(ts + 1), ts
        assert _held_in_memory(index_now) <= PAGE + len(entries) // PAGE + 1
    index.discard_after(2 * PAGE)
    assert index.last_timestamp == entries[2 * PAGE - 1][0]
    assert index.lookup(stamps[-1]) == entries[2 * PAGE - 1][1]
    index.close()
    reopened.close()


def test_a_log_reads_across_many_index_pages_as_a_linear_scan_says(tmp_path: Path) -> None:
    """Through ``PartitionLog.read`` (the fetch path) on a segment whose index spans
    several pages, before and after a reopen: every read starts at the batch holding its
    offset and ends where the byte limit and the upper bound (a last stable offset) say,
    wherever the index entries it needs lie."""
    log = open_log(tmp_path, index_interval_bytes=0)  # an entry for every batch
    for i in range(4 * PAGE + 30):
        log.append(batch(1 + i % 5, tag=i), now_ms=0)
    rng = random.Random(6)
    for reopen in (False, True):
        if reopen:
            log.close()
            log = open_log(tmp_path, index_interval_bytes=0)
        (segment,) = log._segments
        assert len(segment.offset_index) > 3 * PAGE
        linear = list(segment.walk(0))
        for _ in range(300):
            offset = rng.randrange(log.log_end_offset)
            max_bytes = rng.choice([1, 500, 5_000, 50_000, 10**6])
            upper = rng.choice([None, rng.randrange(offset, log.log_end_offset + 1)])
            assert offsets_in(log.read(offset, max_bytes, upper_bound=upper)) == _expected_read(
                linear, offset, max_bytes, upper
            ), (offset, max_bytes, upper)
    log.close()


def _expected_read(
    linear: list[_records.BatchHeader], offset: int, max_bytes: int, upper: int | None
) -> list[tuple[int, int]]:
    """Whole batches from the one holding ``offset``: within ``max_bytes`` but the first,
    none whose base offset is ``upper`` or more."""
    first = next(i for i, h in enumerate(linear) if h.last_offset >= offset)
    if upper is not None and linear[first].base_offset >= upper:
        return []
    taken, size = [linear[first]], linear[first].size
    for header in linear[first + 1 :]:
        if size + header.size > max_bytes or (upper is not None and header.base_offset >= upper):
            break
        taken.append(header)
        size += header.size
    return [(h.base_offset, h.last_offset) for h in taken]
