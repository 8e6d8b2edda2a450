"""What only the RocksDB backend promises: reopening, locking, durable flush."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from headrace.state import (
    RocksDBKeyValueStore,
    RocksDBSessionStore,
    RocksDBWindowStore,
    StoreLockedError,
    StoreState,
    StoreTestContext,
    Window,
    Windowed,
)


def test_key_value_store_survives_reopen(context: StoreTestContext) -> None:
    store = RocksDBKeyValueStore("kv")
    store.init(context)
    store.put_all([(b"a", b"1"), (b"b", b"2")])
    store.put(b"c", b"3")
    store.delete(b"b")
    store.flush()
    store.close()
    assert (context.state_dir / "rocksdb" / "kv").is_dir()

    again = RocksDBKeyValueStore("kv")
    again.init(context)
    assert list(again.all()) == [(b"a", b"1"), (b"c", b"3")]
    again.close()


def test_a_closed_store_can_be_initialised_again(context: StoreTestContext) -> None:
    store = RocksDBKeyValueStore("kv")
    store.init(context)
    store.put(b"a", b"1")
    store.close()
    store.init(context)
    assert store.get(b"a") == b"1"
    store.close()


def test_window_segments_survive_reopen(context: StoreTestContext) -> None:
    store = RocksDBWindowStore("w", retention=1000, window_size=100, segment_interval=250)
    store.init(context)
    for start in (0, 300, 600):
        store.put(b"k", str(start).encode(), start)
    store.close()

    again = RocksDBWindowStore("w", retention=1000, window_size=100, segment_interval=250)
    again.init(context)
    assert [t for t, _ in again.fetch(b"k", 0, 1000)] == [0, 300, 600]
    again.put(b"k", b"far", 2000)  # expires the three segments written before
    assert [t for t, _ in again.fetch(b"k", 0, 3000)] == [2000]
    again.close()
    families = RocksDBWindowStore("w", retention=1000, window_size=100, segment_interval=250)
    families.init(context)
    assert families.raw.segment_ids() == [8]  # type: ignore[attr-defined]
    families.close()


def test_session_store_survives_reopen(context: StoreTestContext) -> None:
    store = RocksDBSessionStore("s", retention=10_000)
    store.init(context)
    store.put(Windowed(b"k", Window(5, 50)), b"v")
    store.close()
    again = RocksDBSessionStore("s", retention=10_000)
    again.init(context)
    assert again.fetch_session(b"k", 5, 50) == b"v"
    again.close()


def test_second_store_on_same_directory_in_process_is_refused(context: StoreTestContext) -> None:
    first = RocksDBKeyValueStore("kv")
    first.init(context)
    second = RocksDBKeyValueStore("kv")
    with pytest.raises(StoreLockedError) as caught:
        second.init(context)
    assert caught.value.retriable
    assert "in use" in str(caught.value)
    assert second._lifecycle.state is StoreState.CLOSED
    first.close()
    second.init(context)  # the lock is gone once the first store closed
    second.close()


def test_directory_held_by_another_live_process_is_refused(tmp_path: Path) -> None:
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys
                from pathlib import Path
                from headrace.state import RocksDBKeyValueStore, StoreTestContext
                store = RocksDBKeyValueStore("kv")
                store.init(StoreTestContext(state_dir=Path({str(tmp_path)!r})))
                print("ready", flush=True)
                sys.stdin.readline()
                store.close()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    ) as holder:
        _hold_and_probe(holder, tmp_path)
    store = RocksDBKeyValueStore("kv")
    store.init(StoreTestContext(state_dir=tmp_path))
    store.close()


def _hold_and_probe(holder: subprocess.Popen[str], tmp_path: Path) -> None:
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        store = RocksDBKeyValueStore("kv")
        with pytest.raises(StoreLockedError, match="in use by another"):
            store.init(StoreTestContext(state_dir=tmp_path))
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=30) == 0


def test_flushed_writes_survive_a_killed_process(tmp_path: Path) -> None:
    """flush() syncs the write-ahead log: data written before it outlives SIGKILL."""
    script = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from headrace.state import RocksDBKeyValueStore, StoreTestContext
        store = RocksDBKeyValueStore("kv")
        store.init(StoreTestContext(state_dir=Path({str(tmp_path)!r})))
        store.put_all([(i.to_bytes(4, "big"), b"x") for i in range(1000)])
        store.flush()
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[2], timeout=60
    )
    assert result.returncode == -9
    store = RocksDBKeyValueStore("kv")
    store.init(StoreTestContext(state_dir=tmp_path))
    assert sum(1 for _ in store.all()) == 1000
    store.close()
