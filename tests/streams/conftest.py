"""Fixtures: a dict-backed key-value store and its builder, to exercise the store hooks."""

from __future__ import annotations

from typing import Any

import pytest

from headrace.streams import StateStoreContext


class DictStore:
    """Bytes-in, bytes-out key-value store that logs every write when asked to."""

    def __init__(self, name: str, logging_enabled: bool) -> None:
        self.name = name
        self.persistent = False
        self.logging_enabled = logging_enabled
        self.data: dict[bytes, bytes] = {}
        self.context: StateStoreContext | None = None
        self.flushes = 0
        self.closed = False

    def init(self, context: StateStoreContext) -> None:
        self.context = context

    def put(self, key: bytes, value: bytes | None, timestamp: int = 0) -> None:
        if value is None:
            self.data.pop(key, None)
        else:
            self.data[key] = value
        if self.logging_enabled:
            assert self.context is not None
            self.context.log_change(self.name, key, value, timestamp)

    def get(self, key: bytes) -> bytes | None:
        return self.data.get(key)

    def range(self, lo: bytes, hi: bytes) -> list[tuple[bytes, bytes]]:
        return sorted((k, v) for k, v in self.data.items() if lo <= k <= hi)

    def put_if_absent(self, key: bytes, value: bytes) -> bytes | None:
        old = self.data.get(key)
        if old is None:
            self.put(key, value)
        return old

    def flush(self) -> None:
        self.flushes += 1

    def close(self) -> None:
        self.closed = True


class DictStoreBuilder:
    def __init__(self, name: str, logging_enabled: bool = True) -> None:
        self.name = name
        self.logging_enabled = logging_enabled
        self.built: list[DictStore] = []

    def build(self) -> Any:
        store = DictStore(self.name, self.logging_enabled)
        self.built.append(store)
        return store


class FakeWindowStore(DictStore):
    def fetch(self, key: bytes, time_from: int, time_to: int) -> list[Any]:
        return []

    def fetch_all(self, time_from: int, time_to: int) -> list[Any]:
        return []


class FakeWindowStoreBuilder(DictStoreBuilder):
    def build(self) -> Any:
        return FakeWindowStore(self.name, self.logging_enabled)


@pytest.fixture
def store_builder() -> type[DictStoreBuilder]:
    return DictStoreBuilder


@pytest.fixture
def window_store_builder() -> type[FakeWindowStoreBuilder]:
    return FakeWindowStoreBuilder
