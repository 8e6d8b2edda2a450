"""Window specifications, Materialized, and the windowed key serdes' byte layout."""

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.dsl import (
    Materialized,
    Serdes,
    SerializationError,
    SessionWindows,
    SlidingWindows,
    TimeWindows,
    TopologyBuildError,
    Window,
    Windowed,
    WindowedSerdes,
    materialized,
)


@given(st.integers(1, 100), st.integers(1, 100), st.integers(0, 10_000))
def test_windows_for_returns_exactly_the_windows_containing_the_timestamp(
    size: int, advance: int, ts: int
) -> None:
    windows = TimeWindows.of_size(size).advance_by(min(advance, size))
    starts = windows.windows_for(ts)
    everything = range(0, ts + 1, windows.advance_ms)
    assert starts == [s for s in everything if s <= ts < s + size]


def test_window_specs_validate_and_accept_timedeltas() -> None:
    assert TimeWindows.of_size(timedelta(minutes=1)).grace(timedelta(seconds=5)).grace_ms == 5_000
    assert TimeWindows.of_size_and_grace(10, 2) == TimeWindows(10, 10, 2)
    assert SlidingWindows.with_time_difference_and_grace(5, 1) == SlidingWindows(5, 1)
    assert SessionWindows.with_inactivity_gap_and_grace(5, 1) == SessionWindows(5, 1)
    for bad in (
        lambda: TimeWindows.of_size(0),
        lambda: TimeWindows.of_size(10).advance_by(11),
        lambda: TimeWindows.of_size(10).grace(-1),
        lambda: SessionWindows.with_inactivity_gap(0),
        lambda: SlidingWindows.with_time_difference(0),
    ):
        with pytest.raises(TopologyBuildError):
            bad()


def test_close_times_follow_the_window_kinds() -> None:
    assert TimeWindows.of_size(10).grace(2).close_time(0, 10) == 12  # end exclusive
    assert SlidingWindows.with_time_difference(10).grace(2).close_time(0, 10) == 13  # end inclusive
    assert SessionWindows.with_inactivity_gap(5).grace(2).close_time(0, 10) == 18  # may still grow


def test_materialized_builders_choose_the_store() -> None:
    m = materialized(
        "s", store="memory", caching=False, logging=False, retention=timedelta(hours=2)
    )
    assert (m.persistent, m.caching, m.logging, m.retention_ms) == (False, False, False, 7_200_000)
    assert materialized("s", persistent=False).persistent is False
    assert Materialized.as_("s").in_memory().with_caching_disabled().with_logging_enabled(
        {"a": "b"}
    ) == Materialized("s", persistent=False, caching=False, logging_config={"a": "b"})
    builder = materialized("kv").key_value_store()
    assert (builder.name, builder.persistent, builder.caching_enabled, builder.logging_enabled) == (
        "kv",
        True,
        True,
        True,
    )
    with pytest.raises(TopologyBuildError, match="shorter"):
        materialized("w", retention=5).window_store(10, 86_400_000)


def test_time_windowed_serde_is_the_inner_key_then_the_start() -> None:
    serde = WindowedSerdes.time_windowed(Serdes.string(), 60_000)
    data = serde.serialize("t", Windowed("page", Window(120_000, 180_000)))
    assert data == b"page" + (120_000).to_bytes(8, "big")
    assert serde.deserialize("t", data) == Windowed("page", Window(120_000, 180_000))
    assert serde.serialize("t", None) is None and serde.deserialize("t", None) is None
    with pytest.raises(SerializationError):
        serde.serialize("t", "not windowed")  # type: ignore[arg-type]  # on purpose


def test_session_windowed_serde_is_the_inner_key_then_end_then_start() -> None:
    serde = WindowedSerdes.session_windowed(Serdes.long())
    data = serde.serialize("t", Windowed(7, Window(100, 250)))
    assert data == (7).to_bytes(8, "big") + (250).to_bytes(8, "big") + (100).to_bytes(8, "big")
    assert serde.deserialize("t", data) == Windowed(7, Window(100, 250))
