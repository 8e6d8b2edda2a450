"""A cleaner killed (SIGKILL) at any step leaves a log that reopens consistently.

The log is built here and closed; a child process opens it and cleans it with a hook
that kills the process at the n-th time a named step is reached. Reopening must then
give either the cleaned or the original record at every offset (some groups swapped,
others not), never both and never anything else, and no leftover swap files; a
further pass must give exactly the fully compacted log. A transactional log, killed in
a pass that removes data and transaction markers, must read the same to
read_committed readers, list no aborted transaction without its marker, and rebuild
the same producer state.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from compaction_helpers import compacted_log, expected_after_clean, keyed, snapshot

from headrace.log_broker._txn_partitions import checkpoint, load

_ROOT = Path(__file__).resolve().parents[3]
_HELPERS = Path(__file__).resolve().parent

_CHILD = """
import os, signal, sys
from pathlib import Path
from compaction_helpers import compacted_log
from headrace.log_broker.storage import _compaction
from headrace.log_broker.storage._cleaner import Cleaner

point, occurrence, directory = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
transactional = len(sys.argv) > 4
seen = 0

def crash(name):
    global seen
    if name == point:
        seen += 1
        if seen == occurrence:
            os.kill(os.getpid(), signal.SIGKILL)

_compaction.crash_hook = crash
if transactional:
    from compaction_txn_helpers import Tracked
    log = compacted_log(directory, segment_bytes=1000, delete_retention_ms=0)
    Tracked(log).clean(int(sys.argv[4]))
else:
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
        cwd=_ROOT,
        env={"PYTHONPATH": f"{_ROOT}:{_HELPERS}"},
        capture_output=True,
        timeout=60,
    )
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
    Cleaner = __import__("headrace.log_broker.storage._cleaner", fromlist=["Cleaner"]).Cleaner
    Cleaner().run([log], 20_000)
    final = [r for r in snapshot(log) if r[0] < end]
    assert final == [r for r in expected if r[2] != b"k0"]
    log.close()


_T0 = 5_000_000


def _build_transactional(directory: Path) -> None:
    """Transactions of two producers over small segments, compacted and their markers
    stamped and released, so that the next pass (at ``_T0 + 2``) removes the markers
    of the first ones and the records the later ones superseded."""
    from compaction_txn_helpers import Tracked

    log = compacted_log(directory, segment_bytes=1000, delete_retention_ms=0)
    t = Tracked(log)

    def transactions(first: int, last: int) -> None:
        for i in range(first, last):
            pid = 1 + i % 2
            t.txn(pid, [(f"k{i % 4}".encode(), f"v{i}".encode()), (f"u{i % 3}".encode(), b"1")])
            t.end(pid, commit=i % 4 != 3)
        t.plain([(b"filler", str(first).encode())])
        log.roll(0)

    transactions(0, 30)
    for now_ms in (_T0, _T0 + 1):  # the data goes, then the markers are stamped
        assert len(t.clean(now_ms)) == 1
        checkpoint(t.live)
        transactions(now_ms - _T0 + 30, now_ms - _T0 + 31)
    transactions(40, 52)  # more to compact in the pass that is killed
    checkpoint(t.live)  # the index file without the released transactions
    log.close()


def _readers_view(
    directory: Path,
) -> tuple[list[tuple[int, bytes | None, bytes | None]], dict[int, tuple[int, int]], set[int]]:
    """read_committed as a restarted broker serves it, each producer's (epoch, last
    sequence) as it rebuilds them, and the offsets of the markers left."""
    from compaction_txn_helpers import batches, committed_view

    log = compacted_log(directory, segment_bytes=1000, delete_retention_ms=0)
    try:
        seen, aborted, _ = committed_view(log)
        markers = {h.base_offset for _, h in batches(log) if h.is_control}
        assert {a.last_offset for a in aborted} <= markers  # every listed abort: its marker
        state = load(log)
        assert state.producers.ongoing() == {}
        producers = {e.producer_id: (e.epoch, e.last_seq) for e in state.producers.entries()}
        return seen, producers, markers
    finally:
        log.close()


@pytest.mark.parametrize(
    ("point", "occurrence"),
    [
        ("writing", 5),
        ("cleaned", 1),
        ("swap", 1),
        ("deleted-0", 1),
        ("installed", 1),
        ("swap", 2),
        ("unlinked", 3),
    ],
)
def test_a_cleaner_killed_while_removing_markers_leaves_what_readers_saw(
    tmp_path: Path, point: str, occurrence: int
) -> None:
    from compaction_txn_helpers import Tracked, latest, read_uncommitted, unneeded_markers

    _build_transactional(tmp_path)
    seen_before, producers_before, markers_before = _readers_view(tmp_path)
    log = compacted_log(tmp_path, segment_bytes=1000, delete_retention_ms=0)
    records_before = set(read_uncommitted(log))
    log.close()
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, point, str(occurrence), str(tmp_path), str(_T0 + 2)],
        cwd=_ROOT,
        env={"PYTHONPATH": f"{_ROOT}:{_HELPERS}"},
        capture_output=True,
        timeout=60,
    )
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr

    seen, producers, markers = _readers_view(tmp_path)
    assert latest(seen) == latest(seen_before)
    assert set(seen) <= set(seen_before)
    assert producers == producers_before
    assert markers <= markers_before
    log = compacted_log(tmp_path, segment_bytes=1000, delete_retention_ms=0)
    assert not [
        p.name
        for p in log.directory.iterdir()
        if p.name.endswith((".cleaned", ".swap", ".deleted"))
    ]
    assert set(read_uncommitted(log)) <= records_before
    t = Tracked(log)  # a broker restarted on the log goes on cleaning it
    for now_ms in range(_T0 + 3, _T0 + 7):
        t.plain([(b"filler", b"after")])
        log.roll(0)
        t.clean(now_ms)
        checkpoint(t.live)
    assert unneeded_markers(log) == []
    assert latest(t.committed()) == {**latest(seen_before), b"filler": b"after"}
    log.close()
    assert len(_readers_view(tmp_path)[2]) < len(markers_before) / 4
