"""The aborted-transaction index: overlap queries, truncation and its file format."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.transactions import AbortedTxn, AbortedTxnIndex


def _index() -> AbortedTxnIndex:
    return AbortedTxnIndex(
        [
            AbortedTxn(1, 0, 10, 0),
            AbortedTxn(2, 5, 20, 11),
            AbortedTxn(3, 25, 30, 21),
        ]
    )


def test_a_fetch_lists_the_aborted_transactions_overlapping_its_range() -> None:
    index = _index()
    assert [t.producer_id for t in index.overlapping(0, 5)] == [1]
    assert [t.producer_id for t in index.overlapping(0, 6)] == [1, 2]
    assert [t.producer_id for t in index.overlapping(11, 26)] == [2, 3]
    assert [t.producer_id for t in index.overlapping(21, 25)] == []
    assert index.overlapping(31, 100) == []


def test_entries_must_arrive_in_marker_order() -> None:
    index = _index()
    with pytest.raises(ValueError):
        index.add(AbortedTxn(4, 0, 30, 0))


def test_truncation_at_either_end() -> None:
    index = _index()
    assert index.truncate_before(11) == 1
    assert [t.producer_id for t in index.entries()] == [2, 3]
    assert index.truncate_after(30) == 1
    assert [t.producer_id for t in index.entries()] == [2]


def test_the_file_format_is_kafkas_34_byte_entries_and_a_torn_tail_is_dropped() -> None:
    data = _index().to_bytes()
    assert len(data) == 3 * 34
    assert data[:2] == b"\x00\x00"
    assert AbortedTxnIndex.from_bytes(data).entries() == _index().entries()
    assert AbortedTxnIndex.from_bytes(data[:-5]).entries() == _index().entries()[:2]


@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 10)), max_size=15),
    st.integers(0, 60),
    st.integers(0, 60),
)
def test_overlap_agrees_with_brute_force(
    spans: list[tuple[int, int]], start: int, end: int
) -> None:
    index = AbortedTxnIndex()
    last = -1
    entries: list[AbortedTxn] = []
    for first, length in spans:
        marker = max(first + length, last + 1)
        entry = AbortedTxn(len(entries), first, marker, 0)
        index.add(entry)
        entries.append(entry)
        last = marker
    expected = [e for e in entries if e.last_offset >= start and e.first_offset < end]
    assert index.overlapping(start, end) == expected


def test_remove_takes_out_one_transaction_by_producer_and_marker_offset() -> None:
    index = _index()
    assert not index.remove(2, 10)  # producer 1's marker, not producer 2's
    assert not index.remove(2, 19)  # no marker there
    assert index.remove(2, 20)
    assert not index.remove(2, 20)  # already gone
    assert [t.producer_id for t in index.entries()] == [1, 3]
    assert [t.producer_id for t in index.overlapping(11, 26)] == [3]
    assert AbortedTxnIndex.from_bytes(index.to_bytes()).entries() == index.entries()
    index.add(AbortedTxn(4, 31, 40, 31))  # later markers still go on after the last
    with pytest.raises(ValueError):
        index.add(AbortedTxn(5, 21, 22, 21))  # but not into the gap a removal left


@given(st.lists(st.booleans(), max_size=12), st.integers(0, 60), st.integers(0, 60))
def test_overlap_after_removals_agrees_with_brute_force(
    removed: list[bool], start: int, end: int
) -> None:
    entries = [AbortedTxn(i % 3, 5 * i, 5 * i + 3, 0) for i in range(len(removed))]
    index = AbortedTxnIndex(entries)
    for entry, gone in zip(entries, removed, strict=True):
        if gone:
            assert index.remove(entry.producer_id, entry.last_offset)
    left = [e for e, gone in zip(entries, removed, strict=True) if not gone]
    assert index.entries() == left
    assert index.overlapping(start, end) == [
        e for e in left if e.last_offset >= start and e.first_offset < end
    ]
