"""A Quix Streams application (a StreamingDataFrame with state and a windowed count) on
the built-in broker.

The application (``quix_app.py``) reads page views keyed by user and writes two outputs:
each user's running number of views (state kept with ``stateful=True``) and, per user and
one-minute tumbling window, every update of the window's count. Quix backs both stores
with compacted changelog topics it creates itself. The expected output is computed here
in plain Python from the views sent, so every record of both outputs is checked.

At least once, clean restarts resume from the committed offsets and a process with an
empty state directory restores its stores from the compacted changelogs. Exactly once
(``processing_guarantee="exactly-once"``: a transactional producer, offsets committed
inside its transactions), a process killed with SIGKILL in the middle of a transaction
leaves output that read_committed readers never see, its successor's output makes the
whole exactly what one clean run would have written, and the changelogs, written in
transactions, are compacted all the same.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path

import pytest
from peers.harness import (
    Cluster,
    PeerProcess,
    Record,
    by_key,
    differences,
    kill_inside_a_transaction,
    page_views,
    running_counts,
)

APP = str(Path(__file__).with_name("quix_app.py"))
INPUT, TOTALS, WINDOWS = "page-views", "view-totals", "view-windows"
WINDOW_MS = 60_000
# Quix creates its changelogs with the broker's default segment.bytes (1 GiB), so the
# cleaner would never see a closed segment; the tests shrink it once the topics exist.
SEGMENT_BYTES = 256
# Each Quix process picks a random transactional id, so a killed process's transaction
# ends only when the broker times it out; a short timeout keeps the wait short.
TXN_TIMEOUT_MS = 5000


class QuixRun:
    """The application's topics and how to start it; one per test, on its own broker."""

    def __init__(self, cluster: Cluster, tmp_path: Path, exactly_once: bool) -> None:
        self.cluster = cluster
        self.tmp_path = tmp_path
        self.exactly_once = exactly_once
        self.app_id = "views-eos" if exactly_once else "views-alos"
        self.changelogs = (
            f"changelog__{self.app_id}--{INPUT}--default",
            f"changelog__{self.app_id}--{INPUT}--tumbling_window_{WINDOW_MS}_count",
        )
        self.produced: list[tuple[bytes, bytes, int]] = []
        self.runs = 0
        cluster.create(INPUT, TOTALS, WINDOWS)

    def produce(self, count: int) -> None:
        batch = page_views(len(self.produced), count)
        self.cluster.produce(INPUT, batch)
        self.produced += batch

    def start(self, state: str, delay_ms: float = 0) -> PeerProcess:
        self.runs += 1
        args = [
            APP,
            "--bootstrap",
            self.cluster.bootstrap,
            "--app-id",
            self.app_id,
            "--input",
            INPUT,
            "--totals",
            TOTALS,
            "--windows",
            WINDOWS,
            "--state-dir",
            str(self.tmp_path / state),
            "--delay-ms",
            str(delay_ms),
        ]
        if self.exactly_once:
            args += ["--exactly-once", "--transaction-timeout-ms", str(TXN_TIMEOUT_MS)]
        return PeerProcess(args, self.tmp_path / f"quix-{self.runs}.log")

    def finish(self, app: PeerProcess) -> None:
        """Wait until the group has committed the end of the input and no transaction
        holds output back from read_committed readers, then stop the process cleanly."""
        try:
            app.wait_for("commit the end of its input", self.cluster.caught_up(self.app_id, INPUT))
            app.wait_for(
                "leave no transaction open",
                lambda: (
                    not any(
                        self.cluster.open_transactions(t)
                        for t in (TOTALS, WINDOWS, *self.changelogs)
                    )
                ),
            )
            assert app.terminate() == 0, app.log()
        finally:
            app.ensure_stopped()

    def run_to_end(self, state: str, produce: int, delay_ms: float = 0) -> None:
        """Produce ``produce`` new views, start a process on them, let it finish them."""
        self.produce(produce)
        self.finish(self.start(state, delay_ms))

    def keys(self) -> list[str]:
        return [key.decode() for key, _v, _ts in self.produced]

    def assert_exact_output(self) -> None:
        """Both outputs, read_committed, are exactly what one clean run writes."""
        totals = self.cluster.read(TOTALS)
        for record in totals:
            assert json.loads(record.value)["user"] == record.key.decode(), record
        got = by_key((r.key.decode(), json.loads(r.value)["views"]) for r in totals)
        want = running_counts(self.keys())
        assert got == want, "totals:\n" + "\n".join(differences(got, want))

        windows = self.cluster.read(WINDOWS)
        for record in windows:
            assert json.loads(record.value)["window"] == record.key.decode(), record
        got = by_key((r.key.decode(), json.loads(r.value)["count"]) for r in windows)
        want = running_counts(
            f"{key.decode()}@{ts - ts % WINDOW_MS}" for key, _v, ts in self.produced
        )
        assert got == want, "windows:\n" + "\n".join(differences(got, want))

    def assert_changelogs(self) -> None:
        """Quix made its changelogs compacted and co-partitioned with the input, and the
        running totals' changelog holds every user's latest total."""
        for changelog in self.changelogs:
            assert changelog in self.cluster.topics()
            assert self.cluster.config(changelog)["cleanup.policy"] == "compact"
            assert self.cluster.partitions(changelog) == self.cluster.partitions(INPUT)
        want = {user: counts[-1] for user, counts in running_counts(self.keys()).items()}
        assert totals_table(self.cluster.read(self.changelogs[0])) == want

    def shrink_changelog_segments(self) -> None:
        for changelog in self.changelogs:
            self.cluster.alter(changelog, {"segment.bytes": str(SEGMENT_BYTES)})
            assert self.cluster.config(changelog)["segment.bytes"] == str(SEGMENT_BYTES)

    def wait_compacted(self, timeout: float = 20) -> None:
        """Until the cleaner has removed superseded records from both changelogs."""
        deadline = time.monotonic() + timeout
        while True:
            removed = {t: self.cluster.removed_by_cleaner(t) for t in self.changelogs}
            if all(n > 0 for n in removed.values()):
                return
            assert time.monotonic() < deadline, (
                f"changelogs not compacted within {timeout:.0f}s; offsets removed: {removed}"
            )
            time.sleep(0.5)


def totals_table(records: Iterable[Record]) -> dict[str, int]:
    """The running totals' store as its changelog holds it, latest record per key.

    Quix keys a changelog record ``<message key>|<state key>``, both JSON; the state key
    of this store is ``"views"``.
    """
    table: dict[str, int] = {}
    for record in records:
        prefix, state_key = record.key.split(b"|", 1)
        assert json.loads(state_key) == "views", record
        user = json.loads(prefix)
        if record.value is None:
            table.pop(user, None)
        else:
            table[user] = json.loads(record.value)
    return table


@pytest.mark.slow
def test_at_least_once_output_resume_and_restore(cluster: Cluster, tmp_path: Path) -> None:
    run = QuixRun(cluster, tmp_path, exactly_once=False)
    run.run_to_end("state-1", produce=150)
    run.assert_exact_output()
    run.assert_changelogs()

    # New input waits while no process runs; the next one, with the same local state,
    # resumes at the committed offsets: nothing counted twice, nothing skipped. It
    # commits a few times (the delay spreads its work over several commit intervals),
    # so each user's total goes to the changelog several times, into small segments
    # that the cleaner compacts.
    run.shrink_changelog_segments()
    run.run_to_end("state-1", produce=120, delay_ms=20)
    run.assert_exact_output()
    run.wait_compacted()
    run.assert_changelogs()

    # A process with an empty state directory: both stores come back from the
    # compacted changelogs alone, and the counts go on from where they were.
    run.run_to_end("state-2", produce=60)
    run.assert_exact_output()
    run.assert_changelogs()


@pytest.mark.slow
def test_exactly_once_output_survives_sigkill(cluster: Cluster, tmp_path: Path) -> None:
    run = QuixRun(cluster, tmp_path, exactly_once=True)
    run.produce(300)
    app = run.start("state-1", delay_ms=20)
    try:
        app.wait_for(
            "commit a third of its input", lambda: sum(cluster.committed(run.app_id, INPUT)) >= 100
        )
        kill_inside_a_transaction(cluster, app, TOTALS)
    finally:
        app.ensure_stopped()
    assert sum(cluster.committed(run.app_id, INPUT)) < len(run.produced), "killed too late"

    # The successor keeps the local state directory, as a restarted container with a
    # volume would; its stores resume from what the changelogs hold committed. It works
    # slowly enough to commit several transactions, each writing the users' totals to
    # the changelogs anew, into small segments: committed transactional records are
    # compacted like any others, and the killed transaction's aborted ones removed.
    run.shrink_changelog_segments()
    run.finish(run.start("state-1", delay_ms=10))
    run.assert_exact_output()
    run.wait_compacted()
    run.assert_changelogs()
    # The killed transaction's output is still in the log, aborted: read_uncommitted
    # readers see it, read_committed ones (above) never did.
    assert len(cluster.read(TOTALS, "read_uncommitted")) > len(cluster.read(TOTALS))

    # With nothing local, the stores are restored from the compacted changelogs alone,
    # so the counts go on exactly.
    run.run_to_end("state-2", produce=60)
    run.assert_exact_output()
    run.assert_changelogs()
