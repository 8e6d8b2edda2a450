"""The garbage collector paused while a read builds a chunk, running while it is held."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from headrace.spark_bridge._collector import paused_between_yields


def test_off_while_each_item_is_made_and_on_while_it_is_held() -> None:
    seen_inside: list[bool] = []

    def chunks() -> Iterator[int]:
        for n in (1, 2):
            seen_inside.append(gc.isenabled())
            yield n
        seen_inside.append(gc.isenabled())  # the run to the end, too

    assert gc.isenabled()
    held = [(n, gc.isenabled()) for n in paused_between_yields(chunks())]
    assert held == [(1, True), (2, True)]
    assert seen_inside == [False, False, False]
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    gc.disable()
    try:
        assert list(paused_between_yields(iter([1, 2]))) == [1, 2]
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_error_or_an_early_close_turns_it_back_on_and_closes_the_source() -> None:
    closed: list[bool] = []

    def chunks() -> Iterator[int]:
        try:
            yield 1
            yield 2
        finally:
            closed.append(True)

    reading = paused_between_yields(chunks())
    assert next(reading) == 1
    reading.close()
    assert closed == [True] and gc.isenabled()

    def failing() -> Iterator[int]:
        yield 1
        raise RuntimeError("fetch failed")

    with pytest.raises(RuntimeError, match="fetch failed"):
        list(paused_between_yields(failing()))
    assert gc.isenabled()
