"""``App.lifespan``: opened before the first record, closed after the last call, in order;
a failing one fails the start and closes those opened before it; ``headrace run``'s
reconfigured App keeps them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from rtprocs import create_topics, produce

from headrace import App, Serdes, StreamsBuilder
from headrace.streams.runtime import AppState
from headrace.streams.runtime._lifespan import Lifespans


def _app(bootstrap: str, tmp_path: Path, name: str, events: list[str]) -> App:
    async def tag(value: str) -> str:
        events.append(f"call {value}")
        await asyncio.sleep(0.01)
        return value.upper()

    builder = StreamsBuilder()
    (
        builder.stream(f"in-{name}", key_serde=Serdes.string(), value_serde=Serdes.string())
        .map_values_async(tag)
        .to(f"out-{name}", key_serde=Serdes.string(), value_serde=Serdes.string())
    )
    return App(
        name,
        builder.build(),
        bootstrap_servers=bootstrap,
        state_dir=str(tmp_path / "state"),
        commit_interval_ms=100,
    )


async def test_lifespans_open_before_the_first_record_and_close_after_the_last(
    broker: Any, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap_servers
    await create_topics(bootstrap, "in-ls", "out-ls", partitions=1)
    events: list[str] = []
    app = _app(bootstrap, tmp_path, "ls", events)

    @app.lifespan
    async def first(given: App) -> AsyncIterator[None]:
        assert given is app
        events.append("open first")
        yield
        events.append(f"close first ({app.state.value})")

    @app.lifespan
    @contextlib.asynccontextmanager
    async def second(given: App) -> AsyncIterator[None]:
        events.append("open second")
        try:
            yield
        finally:
            events.append("close second")

    await produce(bootstrap, "in-ls", [(b"k", b"a"), (b"k", b"b")])
    await app.start()
    try:
        for _ in range(200):
            if app.produced >= 2:
                break
            await asyncio.sleep(0.05)
    finally:
        await app.stop()
    assert app.state is AppState.STOPPED and app.failure is None
    assert events == [
        "open first",
        "open second",
        "call a",
        "call b",
        "close second",
        "close first (stopping)",
    ]


async def test_a_failing_lifespan_fails_the_start_and_closes_the_ones_before(
    broker: Any, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap_servers
    await create_topics(bootstrap, "in-bad", "out-bad", partitions=1)
    events: list[str] = []
    app = _app(bootstrap, tmp_path, "bad", events)

    @app.lifespan
    async def opened(given: App) -> AsyncIterator[None]:
        events.append("open")
        yield
        events.append("close")

    @app.lifespan
    async def broken(given: App) -> AsyncIterator[None]:
        raise ConnectionRefusedError("the price service is down")
        yield

    with pytest.raises(ConnectionRefusedError, match="price service"):
        await app.start()
    assert app.state is AppState.STOPPED
    assert events == ["open", "close"]


def test_a_lifespan_must_open_something() -> None:
    app = _app("127.0.0.1:9", Path("."), "none", [])
    app.lifespan(lambda given: None)
    with pytest.raises(TypeError, match="async generator function or return an async context"):
        asyncio.run(app._lifespans.enter(app))


def test_the_app_headrace_run_builds_keeps_the_lifespans() -> None:
    app = _app("127.0.0.1:9", Path("."), "kept", [])

    @app.lifespan
    async def session(given: App) -> AsyncIterator[None]:
        yield

    rerun = app.reconfigured({"HEADRACE_BOOTSTRAP_SERVERS": "127.0.0.1:19092"})
    assert rerun._lifespans.registered == [session]
    assert rerun.settings.bootstrap_servers == "127.0.0.1:19092"


async def test_a_lifespan_failing_to_close_is_logged_and_the_others_still_close(
    caplog: pytest.LogCaptureFixture,
) -> None:
    closed: list[str] = []
    lifespans = Lifespans()

    @lifespans.add
    async def outer(app: object) -> AsyncIterator[None]:
        try:
            yield  # the error of the lifespan inside it arrives here, as in nested withs
        finally:
            closed.append("outer")

    @lifespans.add
    async def inner(app: object) -> AsyncIterator[None]:
        yield
        raise OSError("the session would not close")

    await lifespans.enter(object())
    with caplog.at_level(logging.ERROR, "headrace.streams.runtime.app"):
        await lifespans.exit()
        await lifespans.exit()  # idempotent: nothing is closed twice
    assert closed == ["outer"]
    assert [r.getMessage() for r in caplog.records] == [
        "a lifespan failed while closing: the session would not close"
    ]
