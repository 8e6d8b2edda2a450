"""`headrace demo`, the README's main command, end to end as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rtprocs import Cluster

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]


def _demo(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "headrace", "demo", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return result, time.monotonic() - started


def test_demo_runs_the_pipeline_on_the_embedded_broker_and_shows_results_live() -> None:
    result, took = _demo()
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert took < 90  # Spark takes ~10 s of it
    assert "[broker]   built-in broker on 127.0.0.1:" in out
    assert "[console]  http://127.0.0.1:" in out
    assert "[done]     all results match" in out
    assert "page views: 10000 of 10000 counted, in 25 of 25 page-minutes" in out
    # The hand-off: exactly once into Delta, then Spark SQL agrees with what was generated.
    assert "25 per-minute counts exported to" in out and "a rerun exported 0" in out
    assert "[spark]    totals match the generated views" in out
    lines = out.splitlines()
    # Results arrive while events are still being generated, not only at the end.
    last_generated = max(i for i, line in enumerate(lines) if line.startswith("[generate]"))
    assert any(line.startswith("[views]") for line in lines[:last_generated]), out
    assert any(line.startswith("[alerts]") for line in lines), out
    assert "Traceback" not in result.stderr


def test_demo_against_a_given_broker_counts_only_its_own_events_run_after_run(
    cluster: Cluster,
) -> None:
    args = (
        "--bootstrap-servers",
        cluster.bootstrap,
        "--events",
        "1500",
        "--minutes",
        "3",
        "--pause",
        "0.3",
    )
    for _ in range(2):  # the second run finds the first run's topics and data
        result, _took = _demo(*args)
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"[broker]   using {cluster.bootstrap}" in result.stdout
        assert "page views: 1500 of 1500 counted, in 15 of 15 page-minutes" in result.stdout
        # Only this run's counts reach Delta, though the topic holds the earlier run's too.
        assert "15 per-minute counts exported to" in result.stdout
        assert "[spark]    totals match the generated views" in result.stdout
