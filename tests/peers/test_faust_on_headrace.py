"""A faust-streaming application (an agent plus a table) on the built-in broker.

The application (``faust_app.py``) counts page views per user in a table and sends each
new count to an output topic. Each test runs it as its users do: in a consumer group,
its table backed by a compacted changelog topic it creates, stopped and started again
on new input, once with a wiped local state directory so that the table is restored
from the compacted changelog alone. At least once, the clean restarts must resume
from the committed offsets, so the output is still exact; exactly once
(``processing_guarantee="exactly_once"``: one transactional producer per input
partition, offsets committed inside the transactions) the first run is also killed
with SIGKILL midway, and the output read with read_committed must still be exact.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from peers.harness import (
    Cluster,
    PeerProcess,
    by_key,
    differences,
    page_views,
    running_counts,
)

APP = str(Path(__file__).with_name("faust_app.py"))
TABLE = "views-per-user"
SEGMENT_BYTES = 2048  # small changelog segments, so the cleaner has closed ones to compact


class FaustRun:
    """The application's topics and how to start it; one per test, on its own broker."""

    def __init__(self, cluster: Cluster, tmp_path: Path, exactly_once: bool) -> None:
        self.cluster = cluster
        self.tmp_path = tmp_path
        self.exactly_once = exactly_once
        self.app_id = "views-eos" if exactly_once else "views-alos"
        self.changelog = f"{self.app_id}-{TABLE}-changelog"
        self.produced: list[tuple[bytes, bytes, int]] = []
        self.runs = 0
        cluster.create("page-views", "views-per-user")

    def produce(self, count: int) -> None:
        batch = page_views(len(self.produced), count)
        self.cluster.produce("page-views", batch)
        self.produced += batch

    def start(self, state: str, delay_ms: float = 0) -> PeerProcess:
        self.runs += 1
        args = [APP, "--bootstrap", self.cluster.bootstrap, "--app-id", self.app_id,
                "--input", "page-views", "--output", "views-per-user",
                "--state-dir", str(self.tmp_path / state),
                "--segment-bytes", str(SEGMENT_BYTES), "--delay-ms", str(delay_ms)]
        if self.exactly_once:
            args.append("--exactly-once")
        return PeerProcess(args, self.tmp_path / f"faust-{self.runs}.log")

    def run_to_end(self, state: str, produce: int) -> None:
        """Start, produce ``produce`` new views once the worker is ready, wait until the
        group has committed the end of the input, stop cleanly.

        The new input waits for the worker to be ready because faust-streaming 0.15
        starts its agents while a rebalance's table recovery is still under way: events
        that arrive then can be counted on a table that recovery overwrites, or leave a
        gap in the acknowledged offsets that stops commits of their partition for good.
        """
        app = self.start(state)
        try:
            app.wait_for("become ready", lambda: app.logged("[^Worker]: Ready"))
            self.produce(produce)
            app.wait_for("commit the end of its input",
                         self.cluster.caught_up(self.app_id, "page-views"))
            assert app.terminate() == 0, app.log()
        finally:
            app.ensure_stopped()

    def assert_exact_output(self) -> None:
        got = by_key((r.key.decode(), int(r.value)) for r in self.cluster.read("views-per-user"))
        want = running_counts(key.decode() for key, _v, _ts in self.produced)
        assert got == want, "\n".join(differences(got, want))

    def table(self) -> dict[str, int]:
        """The table as its changelog holds it: the latest count per user."""
        return {json.loads(r.key): int(r.value) for r in self.cluster.read(self.changelog)}

    def assert_changelog_compacted(self, slack: int = 0) -> None:
        """The table's changelog is compacted by its config and, by now, in fact: fewer
        records than table updates, and the latest one per user holds its count (give
        or take ``slack``)."""
        assert self.changelog in self.cluster.topics()
        assert self.cluster.config(self.changelog)["cleanup.policy"] == "compact"
        assert len(self.cluster.read(self.changelog)) < len(self.produced), (
            "the cleaner left every table update in place")
        want = {key: counts[-1] for key, counts in
                running_counts(k.decode() for k, _v, _ts in self.produced).items()}
        table = self.table()
        assert table.keys() == want.keys()
        off = {user: table[user] - n for user, n in want.items() if table[user] != n}
        assert all(abs(d) <= slack for d in off.values()), off


def wait_compacted(run: FaustRun) -> None:
    deadline = time.monotonic() + 20
    while len(run.cluster.read(run.changelog)) >= len(run.produced):
        assert time.monotonic() < deadline, "the changelog was not compacted within 20s"
        time.sleep(0.5)


def test_at_least_once_counts_resume_and_restore(cluster: Cluster, tmp_path: Path) -> None:
    run = FaustRun(cluster, tmp_path, exactly_once=False)
    run.run_to_end("state-1", produce=240)
    run.assert_exact_output()

    # New input, a new worker with nothing local: the table comes back from the
    # changelog and the stream resumes at the committed offsets, so the counts go on
    # from where they were and nothing is counted twice.
    run.run_to_end("state-2", produce=120)
    run.assert_exact_output()

    wait_compacted(run)
    run.run_to_end("state-3", produce=120)  # restored from the compacted changelog this time
    run.assert_exact_output()
    run.assert_changelog_compacted()
