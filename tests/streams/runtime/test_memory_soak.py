"""A short soak: an application and the built-in broker, each its own process, under a
steady load for a minute; after a 20 s warm-up neither one's resident memory may grow
by more than a bound.

It runs ``benchmarks/memory_soak.py`` (the hour-long soak's command) with a fixed rate:
a windowed count on RocksDB at 2,000 records a second, sampling RSS and the
application's memory figures (RocksDB's, the C heap's, Python's) and the broker's (the C
heap's, Python's) every 5 s, and reads back what it wrote: the samples (CSV) and the
plot (SVG)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow(seconds=65)  # a minute of load, by design

ROOT = Path(__file__).resolve().parents[3]
GROWTH_BOUND_MB = 40
ROCKSDB_CACHE_MB = 128  # state/_rocksdb_options.py: BLOCK_CACHE_BYTES
OUTSIDE_HEAP_BOUND_MB = 10


def test_rss_of_app_and_broker_stays_bounded_over_a_minute_of_load(tmp_path: Path) -> None:
    out = tmp_path / "soak"
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "memory_soak.py"),
            "--seconds",
            "60",
            "--warmup",
            "20",
            "--interval",
            "5",
            "--max-rate",
            "4000",
            "--load",
            "0.5",
            "--max-growth-mb",
            str(GROWTH_BOUND_MB),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    with open(f"{out}.csv", newline="") as f:
        rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
    assert rows[-1]["seconds"] >= 60
    assert rows[-1]["produced"] > 60 * 1000  # the load really ran
    # The application kept up: at the end it is less than 10 s of input behind.
    assert rows[-1]["lag"] < 10 * 2000
    after = [r for r in rows if r["seconds"] >= 20]
    for name in ("broker_rss_mb", "app_rss_mb"):
        assert max(r[name] for r in after) - after[0][name] < GROWTH_BOUND_MB, (name, rows)
    # The application's memory figures were read from its /metrics: RocksDB holds
    # memtables (charged to the block cache) and stays within the cache's capacity, and
    # the C heap, which holds RocksDB's memory, is part of the RSS.
    for row in after:
        assert 0 < row["memtables_mb"] <= row["block_cache_mb"] <= ROCKSDB_CACHE_MB, row
        assert row["app_rocksdb_mb"] < row["malloc_in_use_mb"] <= row["malloc_heap_mb"], row
        assert row["malloc_heap_mb"] < row["app_rss_mb"], row
        assert row["python_blocks"] > 10_000, row
        # The broker's, from its /metrics: Python's blocks and the C heap, in use within size.
        assert row["broker_python_blocks"] > 10_000, row
        assert 0 < row["broker_malloc_in_use_mb"] <= row["broker_malloc_heap_mb"], row
    # What is not the C heap (Python's own arenas, code, stacks) stays put once warm.
    outside = [r["app_rss_mb"] - r["malloc_heap_mb"] for r in after]
    assert max(outside) - outside[0] < OUTSIDE_HEAP_BOUND_MB, rows
    assert Path(f"{out}.svg").read_text().startswith("<svg")
