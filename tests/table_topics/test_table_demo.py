"""``headrace demo --report-from table``: the per-minute counts topic is a table topic, the
table writer beside the built-in broker keeps its table, and the Spark report reads that
table, with no export job. The table is then read here too, and must hold exactly the
counts the demo generated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from deltalake import DeltaTable

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "page-views-per-minute"


def test_demo_reports_from_the_table_topics_table(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "headrace",
            "demo",
            "--report-from",
            "table",
            "--table-location",
            str(lake),
            "--events",
            "1500",
            "--minutes",
            "3",
            "--pause",
            "0.3",
            "--console-listen",
            "off",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    out = result.stdout
    assert result.returncode == 0, out + result.stderr[-3000:]
    assert f"[table]    {TOPIC} is a table topic, at {lake}" in out
    assert f"[table]    15 per-minute counts of this run in the table topic's table {lake}" in out
    assert "exported to" not in out  # no export job ran
    assert "[spark]    totals match the generated views" in out
    assert "[done]     all results match" in out

    table = DeltaTable(str(lake / TOPIC))
    rows = table.to_pyarrow_table().to_pylist()
    counts = [json.loads(r["value"]) for r in rows]
    assert len(counts) == 15
    assert sum(c["views"] for c in counts) == 1500
    assert len({(c["page"], c["minute"]) for c in counts}) == 15  # each page-minute once
    # Every row's key is its page, and the table recorded where each partition ends.
    assert all(r["key"] == c["page"].encode() for r, c in zip(rows, counts, strict=True))
    for partition in {r["partition"] for r in rows}:
        top = max(r["offset"] for r in rows if r["partition"] == partition)
        recorded = table.transaction_version(f"headrace.table/{TOPIC}/{partition}")
        assert recorded is not None and recorded > top
