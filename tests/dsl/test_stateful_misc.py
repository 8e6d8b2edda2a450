"""Odds and ends of the stateful DSL: stores without serdes, the benchmark script."""

import subprocess
import sys
from pathlib import Path

from headrace.dsl import Serdes, StreamsBuilder, materialized
from headrace.streams.testing import TopologyTestDriver


def test_a_store_given_no_serde_keeps_its_values_with_the_auto_serde() -> None:
    builder = StreamsBuilder()
    builder.stream("in", value_serde=Serdes.string()).map_values(
        lambda v: {v: (v,)}
    ).group_by_key().aggregate(
        dict[str, tuple[str]], lambda k, v, agg: {**agg, **v}, materialized=materialized("agg")
    )
    with TopologyTestDriver(builder.build()) as driver:
        source = driver.create_input_topic("in", None, Serdes.string())
        source.pipe_input(b"k", "x")
        source.pipe_input(b"k", "y")
        assert driver.get_key_value_store("agg").get(b"k") == {"x": ("x",), "y": ("y",)}


def test_the_windowed_count_benchmark_runs() -> None:
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [
            sys.executable,
            "benchmarks/dsl_windowed_count.py",
            "--records",
            "20000",
            "--keys",
            "100",
            "--repeats",
            "1",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert result.stdout.count("per CPU second") == 6
