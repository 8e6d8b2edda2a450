"""Stores against plain Python models, over random operation sequences."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headrace.state import (
    InMemoryKeyValueStore,
    RocksDBKeyValueStore,
    SegmentedStore,
    SegmentedWindowStore,
    StoreTestContext,
    WindowKeySchema,
)
from headrace.state._rocksdb import RocksDBBackend
from headrace.state._tables import MemoryBackend

keys = st.binary(min_size=0, max_size=3)
kv_ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), keys, st.one_of(st.none(), st.binary(max_size=3))),
        st.tuples(st.just("delete"), keys, st.none()),
        st.tuples(st.just("flush"), st.just(b""), st.none()),
        st.tuples(st.just("range"), keys, keys),
        st.tuples(st.just("prefix"), keys, st.none()),
    ),
    max_size=60,
)

COMBOS = [(b, s) for b in ("memory", "rocksdb") for s in ("plain", "wrapped")]


@pytest.mark.parametrize(("backend", "stack"), COMBOS)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops=kv_ops)
def test_key_value_store_matches_a_dict(
    stacks: Any,
    backend: str,
    stack: str,
    ops: list,  # type: ignore[type-arg]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        context = StoreTestContext(state_dir=Path(tmp))
        inner = RocksDBKeyValueStore("kv") if backend == "rocksdb" else InMemoryKeyValueStore("kv")
        store = stacks.wrap_kv(inner, stack, cache_size=4)
        store.init(context)
        model: dict[bytes, bytes] = {}
        try:
            for op, a, b in ops:
                if op == "put":
                    store.put(a, b)
                    if b is None:
                        model.pop(a, None)
                    else:
                        model[a] = b
                elif op == "delete":
                    assert store.delete(a) == model.pop(a, None)
                elif op == "flush":
                    store.flush()
                elif op == "range":
                    expect = sorted((k, v) for k, v in model.items() if a <= k <= b)
                    assert list(store.range(a, b)) == expect
                    assert list(store.reverse_range(a, b)) == expect[::-1]
                else:
                    expect = sorted((k, v) for k, v in model.items() if k.startswith(a))
                    assert list(store.prefix_scan(a)) == expect
            assert list(store.all()) == sorted(model.items())
            for key in model:
                assert store.get(key) == model[key]
        finally:
            store.close()


window_ops = st.lists(
    st.tuples(
        st.sampled_from([b"a", b"b", b"bb", b"c"]),
        st.integers(min_value=0, max_value=3000),
        st.one_of(st.none(), st.binary(min_size=1, max_size=2)),
    ),
    max_size=50,
)


@pytest.mark.parametrize(("backend", "stack"), COMBOS)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops=window_ops, query=st.tuples(st.integers(0, 3000), st.integers(0, 3000)))
def test_window_store_matches_a_model_with_retention(
    stacks: Any,
    backend: str,
    stack: str,
    ops: list[Any],
    query: tuple[int, int],
) -> None:
    retention = 1000
    with tempfile.TemporaryDirectory() as tmp:
        context = StoreTestContext(state_dir=Path(tmp))
        b = RocksDBBackend() if backend == "rocksdb" else MemoryBackend()
        raw = SegmentedStore("w", b, WindowKeySchema(), retention, segment_interval=300)
        store = SegmentedWindowStore(stacks.wrap_segmented(raw, stack, 4), retention, 10, False)
        store.init(context)
        model: dict[tuple[bytes, int], bytes] = {}
        observed = -1
        try:
            for key, start, value in ops:
                store.put(key, value, start)
                observed = max(observed, start)
                if start <= observed - retention:
                    continue
                if value is None:
                    model.pop((key, start), None)
                else:
                    model[(key, start)] = value
            live = observed - retention + 1
            t_from, t_to = query
            for key in (b"a", b"b", b"bb", b"c"):
                expect = sorted(
                    (s, v)
                    for (k, s), v in model.items()
                    if k == key and max(t_from, live) <= s <= t_to
                )
                assert list(store.fetch(key, t_from, t_to)) == expect
            expect_all = sorted(
                (k, s, v) for (k, s), v in model.items() if max(t_from, live) <= s <= t_to
            )
            got = sorted((w.key, w.window.start, v) for w, v in store.fetch_all(t_from, t_to))
            assert got == expect_all
            got_range = [
                (w.key, w.window.start) for w, _ in store.fetch_key_range(b"b", b"bb", t_from, t_to)
            ]
            assert got_range == [(k, s) for k, s, _ in expect_all if b"b" <= k <= b"bb"]
        finally:
            store.close()


@given(
    a=st.tuples(st.binary(min_size=1, max_size=4), st.integers(0, 2**62), st.integers(0, 2**31)),
    b=st.tuples(st.binary(min_size=1, max_size=4), st.integers(0, 2**62), st.integers(0, 2**31)),
)
def test_window_keys_of_one_key_sort_by_time_then_seqnum(
    a: tuple[bytes, int, int], b: tuple[bytes, int, int]
) -> None:
    key = a[0]
    ea, eb = WindowKeySchema.encode(key, a[1], a[2]), WindowKeySchema.encode(key, b[1], b[2])
    assert (ea < eb) == ((a[1], a[2]) < (b[1], b[2]))
    assert WindowKeySchema.decode(ea) == (key, a[1], a[2])
