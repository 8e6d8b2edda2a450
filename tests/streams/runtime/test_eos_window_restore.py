"""Final windowed counts survive SIGKILLs exactly: ``headrace.examples.page_views`` under
exactly-once, killed and restarted from a snapshot plus the changelog's tail, then from
the changelog alone, on the built-in broker (``page_views_job.py`` has the job).

Every window's final count must reach a read_committed reader once: none lost (also
not the last minute's, closed by idle time after the input ends, nor a window known
only to the restored stores), none repeated (a window the committed transaction already
emitted stays emitted).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from page_views_job import TASK, Job, views
from rtprocs import Cluster, Instance

pytestmark = pytest.mark.slow

MINUTES, PAGES, PER_PAGE = 8, 50, 10  # 4,000 views, 400 windows


def _snapshot_restores(log: str) -> list[dict[str, int]]:
    """The changelog offsets the counting task restored from, per open from a snapshot."""
    opened = re.compile(rf"task {TASK} opened; restoring (\{{.*\}}) \(from the snapshot\)$")
    return [ast.literal_eval(m.group(1)) for m in map(opened.search, log.splitlines()) if m]


@pytest.mark.timeout(180)
async def test_final_window_counts_are_exact_through_a_snapshot_and_a_changelog_restore(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    rows = views(MINUTES, PAGES, PER_PAGE)
    job = Job(cluster.bootstrap, tmp_path, "pv-restore", rows, per_second=400, started=instances)
    finals, want = await job.run(wait=60)
    log = job.log()
    context = f"{job.timeline}\n{log[-4000:]}"
    assert len(want) == MINUTES * PAGES
    problems = finals.problems(want)
    assert problems == {"lost": [], "repeated": [], "wrong": []}, f"{problems}\n{context}"
    assert finals.records == len(want)
    # The restarts came back the two ways: from the snapshot, then from the changelog.
    assert len(job.timeline) == 2, context
    assert any(min(offsets.values()) > 0 for offsets in _snapshot_restores(log)), context
    # One restore per start at least (a rebalance under load may add one), the last one
    # from the emptied state dir: it read the changelog.
    restores = [line for line in log.splitlines() if f"task {TASK} restored" in line]
    assert len(restores) >= 3 and " restored 0 records" not in restores[-1], context
    assert job.stop() == 0
