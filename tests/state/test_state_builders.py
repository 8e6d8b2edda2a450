"""Builders, typed facades and the contract with the processor API."""

from __future__ import annotations

from typing import Any

import pytest

from headrace.state import (
    KeyValueStore,
    SerializationError,
    SessionStore,
    StateStore,
    StoreBuilder,
    StoreConfigError,
    Stores,
    StoreTestContext,
    Window,
    Windowed,
    WindowStore,
)


class Utf8:
    def serialize(self, topic: str, obj: str) -> bytes | None:
        return obj.encode()

    def deserialize(self, topic: str, data: bytes) -> str:
        return data.decode()


class Int64:
    def __init__(self) -> None:
        self.topics: set[str] = set()

    def serialize(self, topic: str, obj: int) -> bytes | None:
        self.topics.add(topic)
        return obj.to_bytes(8, "big", signed=True)

    def deserialize(self, topic: str, data: bytes) -> int:
        return int.from_bytes(data, "big", signed=True)


def test_builders_are_immutable_and_chainable() -> None:
    base = Stores.key_value_store("counts")
    cached = base.with_caching_enabled(max_entries=10)
    quiet = cached.with_logging_disabled()
    assert (base.caching_enabled, base.logging_enabled, base.persistent) == (False, True, True)
    assert (cached.caching_enabled, cached.cache_max_entries) == (True, 10)
    assert quiet.logging_enabled is False and cached.logging_enabled is True
    configured = quiet.with_logging_enabled({"min.insync.replicas": "1"})
    assert configured.logging_config == {"min.insync.replicas": "1"}
    assert isinstance(base, StoreBuilder)


@pytest.mark.parametrize("persistent", [True, False])
def test_built_stores_meet_the_processor_contract(
    persistent: bool, context: StoreTestContext
) -> None:
    builders: list[Any] = [
        Stores.key_value_store("kv", persistent=persistent),
        Stores.window_store("win", retention=1000, window_size=100, persistent=persistent),
        Stores.session_store("ses", retention=1000, persistent=persistent),
    ]
    for builder in builders:
        first, second = builder.build(), builder.build()
        assert first is not second
        assert isinstance(first, StateStore)
        assert first.name == builder.name and first.persistent is persistent
        first.init(context)
        first.flush()
        first.close()
    assert (context.state_dir / "rocksdb" / "kv").is_dir() is persistent


def test_typed_key_value_store_with_serdes(context: StoreTestContext) -> None:
    values = Int64()
    store: KeyValueStore[str, int] = (
        Stores.key_value_store("counts", persistent=False)
        .with_key_serde(Utf8())
        .with_value_serde(values)
        .with_caching_enabled()
        .build()
    )
    store.init(context)
    store.put("b", 2)
    store.put("a", -1)
    assert store.get("a") == -1
    assert list(store.range("a", "b")) == [("a", -1), ("b", 2)]
    assert store.delete("b") == 2
    changes: list[Any] = []
    store.set_flush_listener(changes.extend)
    store.flush()
    assert [(c.key, c.new_value) for c in changes] == [("b", None), ("a", -1)]
    assert values.topics == {"test-app-counts-changelog"}
    assert context.changelog[-1] == ("counts", b"a", (-1).to_bytes(8, "big", signed=True), 0)
    assert store.metrics is not None and store.metrics.put.count == 2
    store.close()


def test_typed_window_and_session_stores(context: StoreTestContext) -> None:
    windows: WindowStore[str, int] = (
        Stores.window_store("w", retention=10_000, window_size=1000, persistent=False)
        .with_key_serde(Utf8())
        .with_value_serde(Int64())
        .build()
    )
    windows.init(context)
    windows.put("page", 3, 0)
    windows.put("page", 5, 1000)
    assert list(windows.fetch("page", 0, 1000)) == [(0, 3), (1000, 5)]
    assert list(windows.fetch_all(1000, 1000)) == [(Windowed("page", Window(1000, 2000)), 5)]
    windows.close()

    sessions: SessionStore[str, int] = (
        Stores.session_store("s", retention=10_000, persistent=False)
        .with_key_serde(Utf8())
        .with_value_serde(Int64())
        .build()
    )
    sessions.init(context)
    sessions.put(Windowed("user", Window(0, 10)), 1)
    assert list(sessions.find_sessions("user", 5, 20)) == [(Windowed("user", Window(0, 10)), 1)]
    sessions.close()


def test_serde_failures_are_translated(context: StoreTestContext) -> None:
    store = Stores.key_value_store("kv", persistent=False).with_key_serde(Utf8()).build()
    store.init(context)
    with pytest.raises(SerializationError):
        store.put(123, b"v")  # type: ignore[arg-type]
    store.close()


def test_impossible_settings_are_refused() -> None:
    with pytest.raises(StoreConfigError):
        Stores.window_store("w", retention=10, window_size=100)
    with pytest.raises(StoreConfigError):
        Stores.session_store("s", retention=0)
    with pytest.raises(StoreConfigError):
        Stores.key_value_store("kv").with_caching_enabled(max_entries=0)
