"""The async operators of KStream through the test driver, which awaits every call."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headrace.dsl import KStream, Serdes, StreamsBuilder, TopologyBuildError
from headrace.streams import ProcessingError
from headrace.streams.testing import TestRecord, TopologyTestDriver

STR, INT = Serdes.string(), Serdes.integer()


def run(
    pipeline: Callable[[KStream], KStream | None],
    records: list[tuple[Any, Any]],
    out_value: Any = INT,
) -> list[tuple[Any, Any]]:
    builder = StreamsBuilder()
    result = pipeline(builder.stream("in", key_serde=STR, value_serde=INT))
    if result is not None:
        result.to("out", key_serde=STR, value_serde=out_value)
    with TopologyTestDriver(builder.build(), initial_wall_clock=0) as driver:
        driver.create_input_topic("in", STR, INT).pipe_records(records)
        out = driver.create_output_topic("out", STR, out_value)
        return [tuple(kv) for kv in out.read_key_values_to_list()]


async def turns(n: int) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def test_each_async_operator_does_what_its_sync_twin_does() -> None:
    records = [("a", 1), ("b", 2), ("a", 3)]

    async def double(v: int) -> int:
        await turns(3 - v % 3)
        return v * 2

    async def swap(k: str, v: int) -> tuple[str, int]:
        await turns(v)
        return (str(v), len(k))

    async def twice(k: str, v: int) -> list[int]:
        return [v, v + 100]

    async def odd(k: str, v: int) -> bool:
        await turns(1)
        return v % 2 == 1

    assert run(lambda s: s.map_values_async(double, order="partition"), records) == [
        ("a", 2),
        ("b", 4),
        ("a", 6),
    ]
    assert run(lambda s: s.map_async(swap, order="partition"), records) == [
        ("1", 1),
        ("2", 1),
        ("3", 1),
    ]
    assert run(
        lambda s: s.flat_map_values_async(twice, with_key=True, order="partition"), records
    ) == [("a", 1), ("a", 101), ("b", 2), ("b", 102), ("a", 3), ("a", 103)]
    assert run(lambda s: s.filter_async(odd, order="partition"), records) == [("a", 1), ("a", 3)]
    seen: list[tuple[str, int]] = []

    async def note(k: str, v: int) -> None:
        await turns(5 - v)
        seen.append((k, v))

    run(lambda s: s.foreach_async(note, order="none"), records)
    assert sorted(seen) == sorted(records)


@settings(max_examples=40, deadline=None)
@given(
    records=st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 20)), max_size=80),
    concurrency=st.integers(1, 256),
    order=st.sampled_from(["key", "partition"]),
)
def test_per_key_output_order_is_input_order_for_any_delays(
    records: list[tuple[str, int]], concurrency: int, order: Literal["key", "partition"]
) -> None:
    async def slow(v: int) -> int:
        await turns(v)  # larger values finish later
        return v

    got = run(lambda s: s.map_values_async(slow, concurrency=concurrency, order=order), records)
    if order == "partition":
        assert got == records
    for key in "abcd":
        assert [v for k, v in got if k == key] == [v for k, v in records if k == key]


def test_records_keep_timestamp_and_headers_and_feed_stateful_operators() -> None:
    async def tag(v: int) -> str:
        await turns(10 - v)
        return f"n{v}"

    builder = StreamsBuilder()
    tagged = builder.stream("in", key_serde=STR, value_serde=INT).map_values_async(tag)
    tagged.to("tagged", key_serde=STR, value_serde=STR)
    tagged.group_by_key().count().to_stream().to("counts", key_serde=STR, value_serde=Serdes.long())
    with TopologyTestDriver(builder.build(), initial_wall_clock=0) as driver:
        driver.create_input_topic("in", STR, INT).pipe_records(
            [TestRecord("k", v, 1000 + v, (("h", str(v).encode()),)) for v in range(5)]
        )
        out = driver.create_output_topic("tagged", STR, STR).read_records_to_list()
        assert [(r.value, r.timestamp, tuple(r.headers)) for r in out] == [
            (f"n{v}", 1000 + v, (("h", str(v).encode()),)) for v in range(5)
        ]
        counts = driver.create_output_topic("counts", STR, Serdes.long()).read_key_values_to_map()
        assert counts == {"k": 5}


def test_retries_with_back_off_then_success() -> None:
    attempts: dict[int, int] = {}

    async def flaky(v: int) -> int:
        attempts[v] = attempts.get(v, 0) + 1
        if attempts[v] < 3:
            raise ConnectionError("try again")
        return v

    got = run(lambda s: s.map_values_async(flaky, retries=2, backoff=0.001), [("a", 1), ("b", 2)])
    assert got == [("a", 1), ("b", 2)]
    assert attempts == {1: 3, 2: 3}


def test_a_call_failing_after_its_retries_raises_in_the_driver() -> None:
    async def broken(v: int) -> int:
        raise ValueError(f"no {v}")

    with pytest.raises(ProcessingError, match="no 7") as caught:
        run(lambda s: s.map_values_async(broken, retries=1, backoff=0), [("a", 7)])
    assert isinstance(caught.value.__cause__, ValueError)


def test_a_call_over_its_timeout_fails() -> None:
    async def hang(v: int) -> int:
        await asyncio.sleep(5)
        return v

    with pytest.raises(ProcessingError, match="TimeoutError"):
        run(lambda s: s.map_values_async(hang, timeout=0.01), [("a", 1)])


def test_a_sync_function_or_an_unknown_option_is_refused_when_building() -> None:
    stream = StreamsBuilder().stream("in")
    with pytest.raises(TopologyBuildError, match="async def"):
        stream.map_values_async(lambda v: v)
    # the options are keyword parameters: a misspelt one is Python's own TypeError
    with pytest.raises(TypeError, match="'paralellism'"):
        stream.map_values_async(turns, paralellism=3)  # type: ignore[call-overload]
    with pytest.raises(TopologyBuildError, match="order"):
        stream.filter_async(turns, order="sorted")  # type: ignore[arg-type]  # refused before


def test_a_function_that_fails_before_awaiting_fails_its_record_only() -> None:
    async def two_args(k: str, v: int) -> int:
        return v

    # Called with one argument (no with_key): the call itself raises TypeError.
    with pytest.raises(ProcessingError, match="TypeError"):
        run(lambda s: s.map_values_async(two_args), [("a", 1)])  # type: ignore[arg-type]


def test_a_bad_result_or_a_failure_downstream_fails_only_its_record() -> None:
    async def pair(k: str, v: int) -> Any:
        return (k, v) if v != 2 else "not a pair"

    with pytest.raises(ProcessingError, match="offset 1"):
        run(lambda s: s.map_async(pair, order="partition"), [("a", 1), ("b", 2), ("c", 3)])

    async def same(v: int) -> int:
        return v

    def explode(k: str, v: int) -> int:
        if v == 3:
            raise ArithmeticError("downstream")
        return v

    with pytest.raises(ProcessingError, match="downstream"):
        run(lambda s: s.map_values_async(same).map_values(explode, with_key=True), [("a", 3)])
