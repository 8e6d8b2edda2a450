"""The collector tuning keeps young collections out of the processing loop."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headrace.dsl import Serdes, StreamsBuilder
from headrace.streams._task import TaskExecutor
from headrace.streams.runtime._gc import tune_for_streaming

ROUND = 20_000  # the default max_poll_records


@pytest.fixture
def tuned() -> Iterator[list[int]]:
    """The process tuned as ``App.run`` tunes it; the generations collected meanwhile."""
    saved = gc.get_threshold()
    collected: list[int] = []

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collected.append(info["generation"])

    tune_for_streaming()
    gc.callbacks.append(note)
    try:
        yield collected
    finally:
        gc.callbacks.remove(note)
        gc.set_threshold(*saved)
        gc.unfreeze()


def test_rounds_at_the_default_poll_size_run_no_collection(
    tuned: list[int], tmp_path: Path
) -> None:
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=Serdes.string(), value_serde=Serdes.json())
        .filter(lambda _k, v: v["n"] % 2 == 0)
        .map_values(lambda v: {"n": v["n"], "double": v["n"] * 2})
        .to("out", key_serde=Serdes.string(), value_serde=Serdes.json())
    )
    executor = TaskExecutor(builder.build(), 0, 0, {"application_id": "gc"}, state_dir=tmp_path)
    executor.init()
    previous: list[Any] = []
    waiting: list[Any] = []  # produced records wait for their acknowledgement until a commit
    for round_ in range(4):
        records = [
            ("in", 0, i, i, f"user-{i % 1000}".encode(), json.dumps({"n": i}).encode(), ())
            for i in range(round_ * ROUND, (round_ + 1) * ROUND)
        ]
        executor.process_partition("in", 0, records)
        waiting.extend(executor.drain())
        previous = records  # the loop still holds the last round while polling the next
    executor.close()
    assert len(waiting) == 2 * ROUND and previous
    assert tuned == []
