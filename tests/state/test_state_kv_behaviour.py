"""One behaviour suite for key-value stores: both backends, bare and fully wrapped."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from headrace.state import InvalidStoreStateError, KeyValueBytesStore


def fill(kv: KeyValueBytesStore, keys: list[bytes]) -> None:
    for key in keys:
        kv.put(key, b"v" + key)


def test_get_put_delete(kv: KeyValueBytesStore) -> None:
    assert kv.get(b"a") is None
    kv.put(b"a", b"1")
    assert kv.get(b"a") == b"1"
    kv.put(b"a", b"2")
    assert kv.get(b"a") == b"2"
    assert kv.delete(b"a") == b"2"
    assert kv.get(b"a") is None
    assert kv.delete(b"a") is None


def test_put_none_deletes(kv: KeyValueBytesStore) -> None:
    kv.put(b"a", b"1")
    kv.put(b"a", None)
    assert kv.get(b"a") is None
    assert list(kv.all()) == []


def test_put_if_absent(kv: KeyValueBytesStore) -> None:
    assert kv.put_if_absent(b"a", b"1") is None
    assert kv.put_if_absent(b"a", b"2") == b"1"
    assert kv.get(b"a") == b"1"


def test_put_all_applies_puts_and_deletes(kv: KeyValueBytesStore) -> None:
    kv.put(b"gone", b"x")
    kv.put_all([(b"a", b"1"), (b"b", b"2"), (b"gone", None)])
    assert list(kv.all()) == [(b"a", b"1"), (b"b", b"2")]


def test_range_is_inclusive_and_ordered(kv: KeyValueBytesStore) -> None:
    fill(kv, [b"d", b"a", b"c", b"b", b"e"])
    assert [k for k, _ in kv.range(b"b", b"d")] == [b"b", b"c", b"d"]
    assert [k for k, _ in kv.range(None, b"b")] == [b"a", b"b"]
    assert [k for k, _ in kv.range(b"d", None)] == [b"d", b"e"]
    assert [k for k, _ in kv.range(b"bb", b"cc")] == [b"c"]
    assert list(kv.range(b"d", b"b")) == []


def test_reverse_range_and_reverse_all(kv: KeyValueBytesStore) -> None:
    fill(kv, [b"a", b"b", b"c", b"d"])
    assert [k for k, _ in kv.reverse_range(b"b", b"d")] == [b"d", b"c", b"b"]
    assert [k for k, _ in kv.reverse_all()] == [b"d", b"c", b"b", b"a"]


def test_prefix_scan(kv: KeyValueBytesStore) -> None:
    fill(kv, [b"ab", b"a", b"abc", b"b", b"a\xff", b"aa"])
    assert [k for k, _ in kv.prefix_scan(b"a")] == [b"a", b"aa", b"ab", b"abc", b"a\xff"]
    assert [k for k, _ in kv.prefix_scan(b"ab")] == [b"ab", b"abc"]
    assert [k for k, _ in kv.prefix_scan(b"\xff")] == []


def test_prefix_of_all_ff_bytes_has_no_end(kv: KeyValueBytesStore) -> None:
    fill(kv, [b"\xff", b"\xff\xff\x01", b"\xfe"])
    assert [k for k, _ in kv.prefix_scan(b"\xff\xff")] == [b"\xff\xff\x01"]


def test_iteration_spans_many_chunks(kv: KeyValueBytesStore) -> None:
    keys = [i.to_bytes(4, "big") for i in range(1500)]
    kv.put_all([(k, k) for k in reversed(keys)])
    assert [k for k, _ in kv.all()] == keys
    assert [k for k, _ in kv.reverse_all()] == keys[::-1]
    assert [k for k, _ in kv.range(keys[100], keys[1200])] == keys[100:1201]


def test_deleting_while_iterating_is_safe(kv: KeyValueBytesStore) -> None:
    keys = [i.to_bytes(4, "big") for i in range(1200)]
    kv.put_all([(k, b"x") for k in keys])
    seen = []
    for key, _ in kv.all():
        seen.append(key)
        kv.delete(key)
    assert seen == keys
    assert list(kv.all()) == []


def test_approximate_count(kv: KeyValueBytesStore) -> None:
    fill(kv, [b"a", b"b", b"c"])
    kv.flush()
    assert 1 <= kv.approximate_num_entries() <= 10


def test_restore_batch_writes_without_logging(kv: KeyValueBytesStore, context) -> None:  # type: ignore[no-untyped-def]
    kv.restore_batch([(b"a", b"1"), (b"b", b"2"), (b"a", None)])
    assert kv.get(b"a") is None
    assert kv.get(b"b") == b"2"
    assert context.changelog == []


def test_closed_store_refuses_use(kv_factory: Callable[..., KeyValueBytesStore]) -> None:
    kv = kv_factory("closing")
    kv.put(b"a", b"1")
    kv.close()
    with pytest.raises(InvalidStoreStateError):
        kv.get(b"a")
    kv.close()  # closing twice is harmless


def test_get_many_sees_the_cache_and_the_store_in_order(kv: KeyValueBytesStore) -> None:
    kv.put_all([(b"stored", b"s"), (b"deleted", b"d")])
    kv.flush()  # below any cache now
    kv.put(b"pending", b"p")  # a caching stack holds these two until its flush
    kv.put(b"deleted", None)
    keys = [b"absent", b"pending", b"stored", b"deleted", b"stored"]
    assert kv.get_many(keys) == [None, b"p", b"s", None, b"s"]
    assert kv.get_many([]) == []
    # reading many changed nothing: the same answers one by one, and after a flush
    assert [kv.get(k) for k in keys] == [None, b"p", b"s", None, b"s"]
    kv.flush()
    assert kv.get_many(keys) == [None, b"p", b"s", None, b"s"]
