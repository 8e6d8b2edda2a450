"""One behaviour suite for session stores: both backends, bare and fully wrapped."""

from __future__ import annotations

from collections.abc import Callable

from headrace.state import SegmentedSessionStore, StoreTestContext, Window, Windowed

Factory = Callable[..., SegmentedSessionStore]


def s(key: bytes, start: int, end: int) -> Windowed[bytes]:
    return Windowed(key, Window(start, end))


def test_put_fetch_session_remove(session_factory: Factory) -> None:
    store = session_factory()
    store.put(s(b"k", 10, 20), b"v")
    assert store.fetch_session(b"k", 10, 20) == b"v"
    assert store.fetch_session(b"k", 10, 21) is None
    store.remove(s(b"k", 10, 20))
    assert store.fetch_session(b"k", 10, 20) is None
    assert list(store.fetch(b"k")) == []


def test_find_sessions_selects_overlapping_ones(session_factory: Factory) -> None:
    store = session_factory()
    store.put(s(b"k", 0, 10), b"a")
    store.put(s(b"k", 50, 60), b"b")
    store.put(s(b"k", 100, 300), b"c")
    store.put(s(b"j", 50, 60), b"other key")
    # a record at t=55 with gap 10 merges with sessions ending >= 45 and starting <= 65
    assert list(store.find_sessions(b"k", 45, 65)) == [(s(b"k", 50, 60), b"b")]
    assert [v for _, v in store.find_sessions(b"k", 5, 150)] == [b"a", b"b", b"c"]
    assert list(store.find_sessions(b"k", 11, 49)) == []


def test_fetch_and_fetch_range_order(session_factory: Factory) -> None:
    store = session_factory()
    store.put(s(b"b", 100, 300), b"b2")
    store.put(s(b"b", 0, 10), b"b1")
    store.put(s(b"a", 20, 30), b"a1")
    store.put(s(b"c", 20, 30), b"c1")
    assert [v for _, v in store.fetch(b"b")] == [b"b1", b"b2"]
    assert [v for _, v in store.fetch_range(b"a", b"b")] == [b"a1", b"b1", b"b2"]
    assert [v for _, v in store.find_sessions_range(None, None, 25, 1000)] == [b"a1", b"b2", b"c1"]


def test_session_merge_flow(session_factory: Factory) -> None:
    """What a session aggregation does: find, remove the merged ones, put the union."""
    store = session_factory()
    store.put(s(b"k", 0, 10), b"1")
    store.put(s(b"k", 30, 40), b"1")
    found = list(store.find_sessions(b"k", 20 - 15, 20 + 15))
    assert [w for w, _ in found] == [s(b"k", 0, 10), s(b"k", 30, 40)]
    for window, _ in found:
        store.remove(window)
    store.put(s(b"k", 0, 40), b"3")
    assert list(store.fetch(b"k")) == [(s(b"k", 0, 40), b"3")]


def test_retention_follows_session_end(session_factory: Factory, context: StoreTestContext) -> None:
    store = session_factory()
    store.put(s(b"k", 0, 100), b"old")
    store.put(s(b"k", 0, 900), b"long")
    context.stream_time = 1500  # live ends are > 500
    store.put(s(b"k", 1400, 1500), b"new")
    assert [v for _, v in store.fetch(b"k")] == [b"long", b"new"]
