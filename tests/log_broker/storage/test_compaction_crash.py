"""A cleaner killed (SIGKILL) at any step leaves a log that reopens consistently.

The log is built here and closed; a child process opens it and cleans it with a hook
that kills the process at the n-th time a named step is reached. Reopening must then
give either the cleaned or the original record at every offset (some groups swapped,
others not), never both and never anything else, and no leftover swap files; a
further pass must give exactly the fully compacted log.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from compaction_helpers import compacted_log, expected_after_clean, keyed, snapshot

_ROOT = Path(__file__).resolve().parents[3]
_HELPERS = Path(__file__).resolve().parent

_CHILD = """
import os, signal, sys
from pathlib import Path
from compaction_helpers import compacted_log
from log_broker.storage import _compaction
from log_broker.storage._cleaner import Cleaner

point, occurrence, directory = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
seen = 0

def crash(name):
    global seen
    if name == point:
        seen += 1
        if seen == occurrence:
            os.kill(os.getpid(), signal.SIGKILL)

_compaction.crash_hook = crash
log = compacted_log(directory, segment_bytes=1000)
Cleaner().run([log], 10_000)
print("finished without reaching the crash point")
"""


def _build(directory: Path) -> tuple[list[tuple[int, int, bytes | None, bytes | None]], int]:
    log = compacted_log(directory, segment_bytes=1000)
    for i in range(24):
        # A cycling key that later batches supersede, and one that stays: every
        # cleaned group keeps records from several of its originals.
        pairs = [(f"k{i % 5}".encode(), f"v{i}".encode()), (f"u{i}".encode(), b"kept")]
        log.append(keyed(pairs, timestamp=1_000 + i), now_ms=0)
        if i % 2:
            log.roll(0)  # small segments, several to a cleaned group
    records, end = snapshot(log), log.log_end_offset
    log.close()
    return records, end


@pytest.mark.parametrize(
    ("point", "occurrence"),
    [
        ("writing", 3),  # mid-way through writing the first .cleaned segment
        ("cleaned", 1),  # written and fsynced, not committed
        ("swap", 1),  # committed: the .swap log file exists, nothing replaced yet
        ("deleted-0", 1),  # the first original renamed to .deleted
        ("deleted-1", 2),  # second group, two originals renamed
        ("installed", 1),  # swap renamed to the final name, .deleted files remain
        ("swap", 2),  # first group fully done, second committed
        ("unlinked", 3),  # every group done, the checkpoint not yet written
    ],
)
def test_a_cleaner_killed_at_any_step_leaves_a_consistent_log(
    tmp_path: Path, point: str, occurrence: int
) -> None:
    original, end = _build(tmp_path)
    expected = expected_after_clean(original, end)
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, point, str(occurrence), str(tmp_path)],
        cwd=_ROOT, env={"PYTHONPATH": f"{_ROOT}:{_HELPERS}"}, capture_output=True, timeout=60,
    )  # fmt: skip
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr

    log = compacted_log(tmp_path, segment_bytes=1000)
    files = sorted(p.name for p in log.directory.iterdir())
    assert not [name for name in files if name.endswith((".cleaned", ".swap", ".deleted"))]
    recovered = snapshot(log)
    by_offset = {r[0]: r for r in original}
    assert all(by_offset[r[0]] == r for r in recovered)  # nothing new, nothing altered
    assert set(expected) <= set(recovered)  # no latest value lost
    assert [r[0] for r in recovered] == sorted({r[0] for r in recovered})
    assert log.log_end_offset == end
    assert log.append(keyed([(b"k0", b"after")]), now_ms=0).base_offset == end
    log.roll(0)
    Cleaner = __import__("log_broker.storage._cleaner", fromlist=["Cleaner"]).Cleaner
    Cleaner().run([log], 20_000)
    final = [r for r in snapshot(log) if r[0] < end]
    assert final == [r for r in expected if r[2] != b"k0"]
    log.close()
