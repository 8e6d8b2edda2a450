"""Store checkpoints: a consistent on-disk copy of an open store, through every wrapper.

A checkpoint is opened again the way the runtime opens a store: a store of the same
name on a context whose ``state_dir/"rocksdb"/<name>`` is the checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headrace.state import (
    CachingKeyValueStore,
    ChangeLoggingKeyValueStore,
    CheckpointableStore,
    CheckpointUnsupportedError,
    InMemoryKeyValueStore,
    InvalidStoreStateError,
    KeyValueBytesStore,
    MeteredKeyValueStore,
    RocksDBKeyValueStore,
    StoreIOError,
    Stores,
    StoreTestContext,
    Window,
    Windowed,
)


def target(root: Path, name: str) -> Path:
    """Where a store named ``name`` opened on ``StoreTestContext(state_dir=root)`` lives."""
    return root / "rocksdb" / name


def reopened_kv(root: Path, name: str) -> list[tuple[bytes, bytes]]:
    store = RocksDBKeyValueStore(name)
    store.init(StoreTestContext(state_dir=root))
    try:
        return list(store.all())
    finally:
        store.close()


def test_a_checkpoint_holds_the_data_and_not_later_writes(
    stack: str, stacks: Any, context: StoreTestContext, tmp_path: Path
) -> None:
    store = stacks.wrap_kv(RocksDBKeyValueStore("kv"), stack)
    store.init(context)
    try:
        store.put_all([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")])
        store.delete(b"b")
        # Flushed so a caching layer has written down; RocksDB itself is not synced
        # or compacted here: the checkpoint must take the memtable along.
        store.flush()
        assert store.supports_checkpoint
        store.checkpoint(target(tmp_path / "copy", "kv"))
        store.put(b"a", b"changed")
        store.put(b"d", b"4")
        store.flush()
        assert list(store.all()) == [(b"a", b"changed"), (b"c", b"3"), (b"d", b"4")]
    finally:
        store.close()
    assert reopened_kv(tmp_path / "copy", "kv") == [(b"a", b"1"), (b"c", b"3")]


def test_unflushed_writes_in_a_cache_are_not_in_the_checkpoint(
    stacks: Any, context: StoreTestContext, tmp_path: Path
) -> None:
    store = stacks.wrap_kv(RocksDBKeyValueStore("kv"), "wrapped")
    store.init(context)
    try:
        store.put(b"written", b"down")
        store.flush()
        store.put(b"cached", b"only")
        store.checkpoint(target(tmp_path / "before", "kv"))
        store.flush()
        store.checkpoint(target(tmp_path / "after", "kv"))
    finally:
        store.close()
    assert reopened_kv(tmp_path / "before", "kv") == [(b"written", b"down")]
    assert reopened_kv(tmp_path / "after", "kv") == [(b"cached", b"only"), (b"written", b"down")]


def test_built_typed_stores_checkpoint_every_segment(
    context: StoreTestContext, tmp_path: Path
) -> None:
    """A window store keeps one column family per segment; all of them are copied."""
    builder = Stores.window_store("win", retention=10_000, window_size=100, segment_interval=1_000)
    built = builder.with_caching_enabled().build()
    assert isinstance(built, CheckpointableStore)
    built.init(context)
    try:
        context.stream_time = 5_000
        for start in (0, 1_500, 3_200):
            built.put(b"k", str(start).encode(), start)
        built.flush()
        built.checkpoint(target(tmp_path / "copy", "win"))
        built.put(b"k", b"late", 4_000)
    finally:
        built.close()

    copy = builder.build()
    copy.init(StoreTestContext(state_dir=tmp_path / "copy", stream_time=5_000))
    try:
        assert list(copy.all()) == [
            (Windowed(b"k", Window(start, start + 100)), str(start).encode())
            for start in (0, 1_500, 3_200)
        ]
    finally:
        copy.close()


def test_built_session_store_checkpoints(context: StoreTestContext, tmp_path: Path) -> None:
    builder = Stores.session_store("sess", retention=10_000)
    built = builder.build()
    built.init(context)
    try:
        built.put(Windowed(b"user", Window(10, 20)), b"2 clicks")
        built.checkpoint(target(tmp_path / "copy", "sess"))
    finally:
        built.close()
    copy = builder.build()
    copy.init(StoreTestContext(state_dir=tmp_path / "copy"))
    try:
        assert copy.fetch_session(b"user", 10, 20) == b"2 clicks"
    finally:
        copy.close()


@pytest.mark.parametrize(
    "make",
    [
        lambda: InMemoryKeyValueStore("mem"),
        lambda: MeteredKeyValueStore(
            CachingKeyValueStore(ChangeLoggingKeyValueStore(InMemoryKeyValueStore("mem")))
        ),
        lambda: Stores.key_value_store("mem", persistent=False).with_caching_enabled().build(),
        lambda: Stores.window_store("mem", 1_000, 100, persistent=False).build(),
        lambda: Stores.session_store("mem", 1_000, persistent=False).build(),
    ],
    ids=["plain", "wrapped", "typed", "window", "session"],
)
def test_an_in_memory_store_refuses_clearly(
    make: object, context: StoreTestContext, tmp_path: Path
) -> None:
    store = make()  # type: ignore[operator]
    store.init(context)
    try:
        assert store.supports_checkpoint is False
        dest = target(tmp_path / "copy", "mem")
        with pytest.raises(CheckpointUnsupportedError, match="'mem' is kept in memory"):
            store.checkpoint(dest)
        assert not (tmp_path / "copy").exists()
    finally:
        store.close()


def test_a_checkpoint_never_overwrites(context: StoreTestContext, tmp_path: Path) -> None:
    store: KeyValueBytesStore = RocksDBKeyValueStore("kv")
    store.init(context)
    try:
        dest = target(tmp_path / "copy", "kv")
        dest.mkdir(parents=True)
        (dest / "keep").write_text("mine")
        with pytest.raises(StoreIOError, match="already exists"):
            store.checkpoint(dest)
        assert (dest / "keep").read_text() == "mine"
    finally:
        store.close()


def test_a_closed_store_cannot_be_checkpointed(
    stacks: Any, context: StoreTestContext, tmp_path: Path
) -> None:
    store = stacks.wrap_kv(RocksDBKeyValueStore("kv"), "wrapped")
    store.init(context)
    store.close()
    with pytest.raises(InvalidStoreStateError, match="not open"):
        store.checkpoint(target(tmp_path / "copy", "kv"))
    assert not (tmp_path / "copy").exists()
