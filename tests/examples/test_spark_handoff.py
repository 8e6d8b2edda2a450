"""The hand-off example end to end: a streams service -> topic -> Delta -> Spark SQL report."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from brokerproc import BrokerProcess

from headrace.examples.spark_handoff import sample_views, windowed_counts

ROOT = Path(__file__).resolve().parents[2]


def test_windowed_counts_add_up_to_the_views() -> None:
    views = sample_views(800, minutes=4)
    counts = windowed_counts(views)
    assert len({(page, r["minute"]) for page, r in counts}) == len(counts)  # final: one each
    per_page: Counter[str] = Counter()
    for page, report in counts:
        per_page[page] += report["views"]
    assert per_page == Counter(v.value["page"] for v in views)


@pytest.mark.slow
def test_the_example_runs_as_a_program(broker_process: BrokerProcess, tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "headrace.examples.spark_handoff",
            "--bootstrap-servers",
            broker_process.bootstrap,
            "--delta-path",
            str(tmp_path / "ppm"),
            "--views",
            "3000",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    out = result.stdout
    assert "3000 views -> " in out
    assert "rerun exported 0" in out
    assert "3000 views in the report; matches the 3000 views counted directly: True" in out
    header = next(line for line in out.splitlines() if line.startswith("page"))
    assert header.split() == ["page", "views", "minutes", "busiest_minute", "peak"]
