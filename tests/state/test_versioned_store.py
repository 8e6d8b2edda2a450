"""Versioned key-value stores (KIP-889) against a reference of Kafka Streams' rules, on
RocksDB and in memory; their changelog, and a restore from it through the runtime's
own restore step, give back the same versions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headrace.dsl import Serdes
from headrace.state import (
    PUT_RETURN_CODE_NOT_PUT,
    PUT_RETURN_CODE_VALID_TO_UNDEFINED,
    Stores,
    VersionedRecord,
)
from headrace.state._testing import StoreTestContext
from headrace.streams.runtime._standby import apply_changelog

KEYS = (b"a", b"b", b"ab")


class Reference:
    """Every version kept forever, answers cut by Kafka Streams' rules: what the store
    must answer, however it lays versions out and whenever it drops expired ones."""

    def __init__(self, history: int) -> None:
        self.history, self.observed = history, -1
        self.versions: dict[bytes, dict[int, bytes | None]] = {}

    def put(self, key: bytes, value: bytes | None, ts: int) -> int:
        if ts < self.observed - self.history:
            return PUT_RETURN_CODE_NOT_PUT
        self.observed = max(self.observed, ts)
        versions = self.versions.setdefault(key, {})
        versions[ts] = value
        later = [t for t in versions if t > ts]
        return min(later) if later else PUT_RETURN_CODE_VALID_TO_UNDEFINED

    def get(self, key: bytes, as_of: int | None = None) -> Any:
        versions = self.versions.get(key, {})
        if as_of is not None and as_of < self.observed - self.history:
            latest = self.get(key)
            return latest if latest is not None and latest.timestamp <= as_of else None
        starts = [t for t in versions if as_of is None or t <= as_of]
        if not starts:
            return None
        start = max(starts)
        later = [t for t in versions if t > start]
        value = versions[start]
        return None if value is None else VersionedRecord(value, start, min(later, default=None))


def open_store(tmp: Path, history: int, persistent: bool = True) -> tuple[Any, StoreTestContext]:
    store = Stores.versioned_key_value_store("versions", history, persistent=persistent).build()
    context = StoreTestContext(tmp)
    store.init(context)
    return store, context


operations = st.lists(
    st.tuples(
        st.sampled_from(["put", "delete"]),
        st.sampled_from(KEYS),
        st.integers(0, 60),
        st.sampled_from([b"1", b"2", b""]),
    ),
    max_size=50,
)


@settings(max_examples=60, deadline=None)
@given(operations, st.integers(0, 25), st.booleans())
def test_every_answer_is_kafka_streams_answer(
    tmp_path_factory: pytest.TempPathFactory, ops: list[Any], history: int, persistent: bool
) -> None:
    store, _ = open_store(tmp_path_factory.mktemp("v"), history, persistent)
    reference = Reference(history)
    try:
        for op, key, ts, value in ops:
            if op == "put":
                assert store.put(key, value, ts) == reference.put(key, value, ts)
            else:
                expected = reference.get(key, ts) if ts >= reference.observed - history else None
                assert store.delete(key, ts) == expected
                reference.put(key, None, ts)
            for k in KEYS:
                assert store.get(k) == reference.get(k)
                for at in range(0, 66, 3):
                    assert store.get(k, at) == reference.get(k, at), (k, at)
    finally:
        store.close()


def test_out_of_order_puts_land_in_history_and_expired_ones_are_dropped(tmp_path: Path) -> None:
    store, _ = open_store(tmp_path, history=100)
    assert store.put(b"k", b"v10", 10) == PUT_RETURN_CODE_VALID_TO_UNDEFINED
    assert store.put(b"k", b"v30", 30) == PUT_RETURN_CODE_VALID_TO_UNDEFINED
    assert store.put(b"k", b"v20", 20) == 30  # into history, valid until 30
    assert store.get(b"k") == VersionedRecord(b"v30", 30, None)
    assert store.get(b"k", 25) == VersionedRecord(b"v20", 20, 30)
    assert store.get(b"k", 19) == VersionedRecord(b"v10", 10, 20)
    assert store.put(b"k", b"late", 5) == 10  # still inside the history: the first version
    assert store.put(b"other", b"x", 200) == PUT_RETURN_CODE_VALID_TO_UNDEFINED
    assert store.put(b"k", b"too-late", 99) == PUT_RETURN_CODE_NOT_PUT  # 99 < 200 - 100
    # Older than the history (before 100): only the latest answers, if it is old enough.
    assert store.get(b"k", 99) == VersionedRecord(b"v30", 30, None)
    assert store.get(b"k", 25) is None
    assert store.get(b"k", 150) == VersionedRecord(b"v30", 30, None)
    store.close()


def test_expired_versions_leave_the_store(tmp_path: Path) -> None:
    store, _ = open_store(tmp_path, history=10, persistent=False)  # exact entry counts
    for ts in range(1000):
        store.put(b"k", str(ts).encode(), ts)
    # The latest plus the versions still inside the history (valid at 989 or later).
    assert store.inner.wrapped.approximate_num_entries() <= 12
    assert store.get(b"k", 990) == VersionedRecord(b"990", 990, 991)
    store.close()


def test_the_changelog_restores_the_same_versions(tmp_path: Path) -> None:
    store, context = open_store(tmp_path / "first", history=50)
    puts: list[tuple[bytes, bytes | None, int]] = [
        (b"a", b"1", 10),
        (b"a", b"3", 30),
        (b"a", b"2", 20),
        (b"b", b"x", 15),
        (b"a", None, 40),
        (b"b", b"y", 100),
        (b"a", b"late", 20),  # 20 < 100 - 50: dropped, logged all the same (as Kafka Streams)
        (b"a", b"5", 60),
    ]
    for key, value, ts in puts:
        store.put(key, value, ts)
    logged = [(k, v, ts) for name, k, v, ts in context.changelog if name == "versions"]
    assert logged == puts  # the record's timestamp is the version's start
    answers = {(k, at): store.get(k, at) for k in (b"a", b"b") for at in range(0, 120, 5)}
    store.close()

    # A fresh store, restored the way the runtime restores: (offset, key, value, ts).
    restored, _ = open_store(tmp_path / "second", history=50)
    changelog = [(offset, k, v, ts) for offset, (k, v, ts) in enumerate(logged)]
    apply_changelog(restored, "versions", "0_0", changelog)
    assert {
        (k, at): restored.get(k, at) for k in (b"a", b"b") for at in range(0, 120, 5)
    } == answers
    assert restored.put(b"a", b"old", 49) == PUT_RETURN_CODE_NOT_PUT  # its stream time came back
    restored.close()


def test_a_reopened_rocksdb_store_keeps_versions_and_stream_time(tmp_path: Path) -> None:
    store, _ = open_store(tmp_path, history=50)
    store.put(b"k", b"1", 10)
    store.put(b"k", b"2", 100)
    store.close()
    reopened, _ = open_store(tmp_path, history=50)
    assert reopened.get(b"k", 60) == VersionedRecord(b"1", 10, 100)
    assert reopened.put(b"k", b"0", 49) == PUT_RETURN_CODE_NOT_PUT
    reopened.close()


def test_typed_store_with_serdes(tmp_path: Path) -> None:
    builder = (
        Stores.versioned_key_value_store("typed", 1000)
        .with_key_serde(Serdes.string())
        .with_value_serde(Serdes.long())
    )
    store = builder.build()
    store.init(StoreTestContext(tmp_path))
    store.put("k", 7, 100)
    assert store.delete("k", 200) == VersionedRecord(7, 100, None)
    assert store.get("k") is None
    assert store.get("k", 150) == VersionedRecord(7, 100, 200)
    store.close()
