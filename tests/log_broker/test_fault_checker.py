"""A bounded run of the Jepsen-style fault checker (benchmarks/fault_checker.py; the
long run is the same command with --seconds 1800)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

CHECKER = Path(__file__).resolve().parents[2] / "benchmarks" / "fault_checker.py"


@pytest.mark.timeout(300)
def test_kills_pauses_and_torn_tails_lose_nothing_acknowledged() -> None:
    done = subprocess.run(
        [sys.executable, str(CHECKER), "--seconds", "20", "--fault-every", "2.5", "--seed", "7"],
        capture_output=True,
        text=True,
        timeout=280,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-3000:]
    assert "anomalies: none" in out
    faults = re.search(r"faults \{(.*?)\}", out)
    assert faults is not None and sum(map(int, re.findall(r": (\d+)", faults[1]))) >= 4, out
    acknowledged = re.search(r"acknowledged (\d+), committed (\d+)", out)
    assert acknowledged is not None and min(map(int, acknowledged.groups())) > 100, out
