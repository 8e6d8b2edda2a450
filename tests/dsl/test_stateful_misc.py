"""Odds and ends of the stateful DSL: missing serdes, the benchmark script."""

import subprocess
import sys
from pathlib import Path

import pytest

from headrace.dsl import Serdes, StreamsBuilder
from headrace.streams import ProcessingError
from headrace.streams.testing import TopologyTestDriver


def test_a_missing_serde_for_a_store_is_named_in_the_error() -> None:
    builder = StreamsBuilder()
    builder.stream("in", value_serde=Serdes.string()).map_values(lambda v: {"v": v}).group_by_key().aggregate(
        dict, lambda k, v, agg: {**agg, **v}
    )
    with TopologyTestDriver(builder.build()) as driver:
        source = driver.create_input_topic("in", None, Serdes.string())
        with pytest.raises(ProcessingError, match="no serde for a dict"):
            source.pipe_input(b"k", "x")


def test_the_windowed_count_benchmark_runs() -> None:
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "benchmarks/dsl_windowed_count.py", "--records", "20000", "--keys", "100", "--repeats", "1"],
        cwd=root, capture_output=True, text=True, timeout=120, check=True,
    )
    assert result.stdout.count("per CPU second") == 6
