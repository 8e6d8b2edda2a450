"""Read-ahead hints after segment reads (``_read_ahead``): each range asked for once,
none at the tail, a reader far behind asks from where it reads."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest
from storage_batches import batch, open_log

from headrace.log_broker.storage._read_ahead import WINDOW, advise_after_read

MB = 1 << 20


@pytest.fixture
def advised(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    calls: list[tuple[int, int, int]] = []

    def record(fd: int, offset: int, length: int, advice: int) -> None:
        assert advice == os.POSIX_FADV_WILLNEED
        calls.append((fd, offset, length))

    monkeypatch.setattr(os, "posix_fadvise", record, raising=False)
    return calls


def test_a_sequential_reader_asks_for_each_range_once(advised: list[tuple[int, int, int]]) -> None:
    size, advised_to = 40 * MB, 0
    for end in range(MB, size + 1, MB):
        advised_to = advise_after_read(7, end, size, advised_to)
    ranges = sorted((offset, offset + length) for _, offset, length in advised)
    assert ranges[0][0] == MB and ranges[-1][1] == size
    for (_, stop), (start, _) in itertools.pairwise(ranges):
        assert start == stop  # contiguous, no byte asked for twice
    assert len(advised) <= 2 * size // WINDOW + 1  # not once per read


def test_a_read_at_the_end_of_the_data_asks_nothing(advised: list[tuple[int, int, int]]) -> None:
    assert advise_after_read(7, 5 * MB, 5 * MB, 0) == 0
    assert advised == []


def test_a_reader_far_behind_asks_from_its_own_position(
    advised: list[tuple[int, int, int]],
) -> None:
    advised_to = advise_after_read(7, 100 * MB, 200 * MB, 0)
    advise_after_read(7, 2 * MB, 200 * MB, advised_to)
    assert advised[-1] == (7, 2 * MB, WINDOW)


def test_a_segment_read_asks_for_the_bytes_after_it(
    tmp_path: Path, advised: list[tuple[int, int, int]]
) -> None:
    log = open_log(tmp_path)
    one = batch(10, value_size=1000)
    for _ in range(100):
        log.append(bytearray(one), now_ms=0)
    data = log.read(0, len(one) * 3)
    assert len(data) == len(one) * 3
    [(_, offset, length)] = advised
    assert offset == len(data) and offset + length == len(one) * 100  # the rest of the data
    log.read(log.log_end_offset - 10, 1 << 20)  # the tail: nothing after it
    assert len(advised) == 1
    log.close()
