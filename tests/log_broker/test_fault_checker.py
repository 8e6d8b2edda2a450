"""The Jepsen-style fault checker (benchmarks/fault_checker.py): a bounded run against
the real broker (the long run is the same command with --seconds 1800), and its
poll-skip check fed with histories that have, and have not, skipped."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
CHECKER = BENCHMARKS / "fault_checker.py"
sys.path.insert(0, str(BENCHMARKS))
from fault_groups import Consumed, GroupHistory, poll_skips  # noqa: E402

LOG = {0: [(0, "a"), (1, "b"), (2, "c"), (4, "d"), (5, "e")]}  # offset 3: a marker


def history(reads: list[tuple[int, int]], commits: list[tuple[int, int]]) -> GroupHistory:
    """``reads``: (session, offset) of partition 0 in order; ``commits``: (after how
    many reads, offset) attempted."""
    group = GroupHistory("g", "read_committed")
    values = dict(LOG[0])
    for seq, (session, offset) in enumerate(reads):
        group.consumed.append(Consumed(2 * seq + 1, session, 0, offset, values[offset]))
    group.commits = [(2 * after, 0, offset) for after, offset in commits]
    return group


def test_a_resume_from_the_commit_and_a_reread_are_not_skips() -> None:
    # Session 1 reads a, b and commits 2; session 2 (after a crash without committing
    # c) resumes at 2 and reads c again: at least once, nothing skipped.
    group = history([(1, 0), (1, 1), (1, 2), (2, 2), (2, 4), (2, 5)], [(2, 2)])
    assert poll_skips(group, LOG) == {}


def test_a_session_that_starts_past_the_last_commit_is_a_poll_skip() -> None:
    group = history([(1, 0), (1, 1), (2, 4), (2, 5)], [(2, 2)])
    assert list(poll_skips(group, LOG)) == ["poll skip"]
    assert "skipping [2]" in poll_skips(group, LOG)["poll skip"][0]


def test_a_gap_within_a_session_is_a_poll_skip_and_a_step_back_non_monotonic() -> None:
    skipped = poll_skips(history([(1, 0), (1, 2), (1, 4)], []), LOG)
    assert list(skipped) == ["poll skip"] and "skipping [1]" in skipped["poll skip"][0]
    back = poll_skips(history([(1, 0), (1, 1), (1, 0)], []), LOG)
    assert list(back) == ["non-monotonic poll"]


def test_a_record_the_log_does_not_hold_is_a_phantom_read() -> None:
    group = history([(1, 0)], [])
    group.consumed.append(Consumed(99, 1, 0, 1, "not-b"))
    assert "phantom read" in poll_skips(group, LOG)


@pytest.mark.timeout(300)
def test_kills_pauses_and_torn_tails_lose_and_skip_nothing() -> None:
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
    # Both groups consumed, over more than one session each (rebalances, restarts).
    groups = re.findall(r"read (\d+) records in (\d+) sessions", out)
    assert len(groups) == 2, out
    assert all(int(read) > 100 and int(sessions) > 1 for read, sessions in groups), out
