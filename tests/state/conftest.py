from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ParamSpec, TypeVar

import pytest

from headrace.state import (
    CachingKeyValueStore,
    CachingSegmentedStore,
    ChangeLoggingKeyValueStore,
    ChangeLoggingSegmentedStore,
    InMemoryKeyValueStore,
    KeyValueBytesStore,
    MeteredKeyValueStore,
    MeteredSegmentedStore,
    RocksDBKeyValueStore,
    SegmentedBytesStore,
    SegmentedSessionStore,
    SegmentedStore,
    SegmentedWindowStore,
    SessionKeySchema,
    StateStore,
    StoreTestContext,
    WindowKeySchema,
)
from headrace.state._rocksdb import RocksDBBackend
from headrace.state._tables import Backend, MemoryBackend

BACKENDS = ["memory", "rocksdb"]
STACKS = ["plain", "wrapped"]


def make_backend(kind: str) -> Backend:
    return RocksDBBackend() if kind == "rocksdb" else MemoryBackend()


@pytest.fixture
def context(tmp_path: Path) -> StoreTestContext:
    return StoreTestContext(state_dir=tmp_path)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def wrap_kv(inner: KeyValueBytesStore, stack: str, cache_size: int = 1000) -> KeyValueBytesStore:
    if stack == "plain":
        return inner
    return MeteredKeyValueStore(CachingKeyValueStore(ChangeLoggingKeyValueStore(inner), cache_size))


def wrap_segmented(
    raw: SegmentedBytesStore, stack: str, cache_size: int = 1000
) -> SegmentedBytesStore:
    if stack == "plain":
        return raw
    return MeteredSegmentedStore(
        CachingSegmentedStore(ChangeLoggingSegmentedStore(raw), cache_size)
    )


class Stacks:
    """Hands the stack helpers to tests that build stores themselves (property tests)."""

    wrap_kv = staticmethod(wrap_kv)
    wrap_segmented = staticmethod(wrap_segmented)


@pytest.fixture
def stacks() -> type[Stacks]:
    return Stacks


S = TypeVar("S", bound=StateStore)
P = ParamSpec("P")


def opened_by(context: StoreTestContext, build: Callable[P, S]) -> Iterator[Callable[P, S]]:
    """Yields a factory that builds a store with ``build`` and opens it on ``context``;
    when the test is done, closes every store it opened."""
    opened: list[S] = []

    def make(*args: P.args, **kwargs: P.kwargs) -> S:
        store = build(*args, **kwargs)
        store.init(context)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def kv_factory(
    backend: str, stack: str, context: StoreTestContext
) -> Iterator[Callable[..., KeyValueBytesStore]]:
    def build(name: str = "kv", cache_size: int = 1000) -> KeyValueBytesStore:
        inner = RocksDBKeyValueStore(name) if backend == "rocksdb" else InMemoryKeyValueStore(name)
        return wrap_kv(inner, stack, cache_size)

    yield from opened_by(context, build)


@pytest.fixture
def kv(kv_factory: Callable[..., KeyValueBytesStore]) -> KeyValueBytesStore:
    return kv_factory()


@pytest.fixture
def window_factory(
    backend: str, stack: str, context: StoreTestContext
) -> Iterator[Callable[..., SegmentedWindowStore]]:
    def build(
        name: str = "win",
        retention: int = 1000,
        window_size: int = 100,
        retain_duplicates: bool = False,
        segment_interval: int | None = 250,
    ) -> SegmentedWindowStore:
        raw = SegmentedStore(
            name, make_backend(backend), WindowKeySchema(), retention, segment_interval
        )
        return SegmentedWindowStore(
            wrap_segmented(raw, stack), retention, window_size, retain_duplicates
        )

    yield from opened_by(context, build)


@pytest.fixture
def session_factory(
    backend: str, stack: str, context: StoreTestContext
) -> Iterator[Callable[..., SegmentedSessionStore]]:
    def build(
        name: str = "sess", retention: int = 1000, segment_interval: int | None = 250
    ) -> SegmentedSessionStore:
        raw = SegmentedStore(
            name, make_backend(backend), SessionKeySchema(), retention, segment_interval
        )
        return SegmentedSessionStore(wrap_segmented(raw, stack), retention)

    yield from opened_by(context, build)
