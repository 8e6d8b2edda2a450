"""A faust-streaming application (an agent plus a table) on the built-in broker.

The application (``faust_app.py``) counts page views per user in a table and sends each
new count to an output topic. Each test runs it as its users do: in a consumer group,
its table backed by a compacted changelog topic it creates, stopped and started again
on new input, with a wiped local state directory so that the table is restored from
the compacted changelog alone. At least once, the clean restarts must resume from the
committed offsets, so the output is still exact.

Exactly once (``processing_guarantee="exactly_once"``: one transactional producer per
input partition, offsets committed inside the transactions) the output, read with
read_committed, is exact across clean restarts. faust-streaming 0.15.3 cannot keep it
exact across a crash, on any broker:

1. It sends to a topic the application does not consume outside any transaction:
   ``TransactionManager.send`` asks the consumer for the partition, and the consumer
   knows only subscribed topics, so the send gets no transactional id. Only the
   table's changelog is transactional.
2. It acknowledges an event when the agent asks for the next one, and commits on a
   timer, so a transaction can commit an event's table write without its offset.
3. Under exactly once, its offset commit does not flush the producer first.
4. Agents start before table recovery ends; the tests send input only after the
   worker logs ``[^Worker]: Ready``.
5. A clean stop commits only offsets still pending. Table writes sent after the last
   offset commit (3) are left in an open transaction, which the next start's producer
   aborts, so those counts are lost from the table. On a loaded machine the changelog's
   send buffer lags the commit timer often enough to see this. Before each clean stop
   the exactly-once tests therefore wait until the changelog, read_committed, holds every
   count. While it does not, they send each input partition a record the agent skips
   (``tick``); its offset commit commits the transaction.

So the SIGKILL test asserts what does hold after a crash, and one test pins the facts of
(1), so that it fails, and says so, when a faust release sends the output in its
transactions.
"""

from __future__ import annotations

import json
import time
from itertools import pairwise
from pathlib import Path

import pytest
from peers.faust_app import TICK
from peers.harness import (
    PARTITIONS,
    Cluster,
    PeerProcess,
    by_key,
    differences,
    kill_inside_a_transaction,
    page_views,
    running_counts,
)

APP = str(Path(__file__).with_name("faust_app.py"))
INPUT, OUTPUT = "page-views", "views-per-user"
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
        cluster.create(INPUT, OUTPUT)

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
            "--output",
            OUTPUT,
            "--state-dir",
            str(self.tmp_path / state),
            "--segment-bytes",
            str(SEGMENT_BYTES),
            "--delay-ms",
            str(delay_ms),
        ]
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
            app.wait_for("commit the end of its input", self.cluster.caught_up(self.app_id, INPUT))
            if self.exactly_once:
                self.commit_the_table(app)
            assert app.terminate() == 0, app.log()
        finally:
            app.ensure_stopped()

    def commit_the_table(self, app: PeerProcess, timeout: float = 60) -> None:
        """Tick the input until the changelog, read_committed, holds every count (bug 5)."""
        want = self.latest_counts()
        deadline = time.monotonic() + timeout
        while (table := self.table()) != want:
            off = {k: (table.get(k), n) for k, n in want.items() if table.get(k) != n}
            assert time.monotonic() < deadline, f"(table, counted) per user: {off}"
            self.cluster.produce_to_each_partition(INPUT, TICK, b"")
            app.wait_for("commit the ticks", self.cluster.caught_up(self.app_id, INPUT))

    def want(self) -> dict[str, list[int]]:
        """Each user's running counts over the input produced so far."""
        return running_counts(key.decode() for key, _v, _ts in self.produced)

    def latest_counts(self) -> dict[str, int]:
        """Each user's count over the input produced so far: what the table must hold."""
        return {key: counts[-1] for key, counts in self.want().items()}

    def assert_exact_output(self) -> None:
        got, want = self.output(), self.want()
        assert got == want, "\n".join(differences(got, want))

    def output(self) -> dict[str, list[int]]:
        """Each user's counts as read_committed readers see them, in order."""
        return by_key((r.key.decode(), int(r.value)) for r in self.cluster.read(OUTPUT))

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
            "the cleaner left every table update in place"
        )
        want = self.latest_counts()
        table = self.table()
        assert table.keys() == want.keys()
        off = {user: table[user] - n for user, n in want.items() if table[user] != n}
        assert all(abs(d) <= slack for d in off.values()), off


def markers(cluster: Cluster, topic: str) -> set[str | None]:
    return {b.marker for b in cluster.batches(topic) if b.control}


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


@pytest.mark.slow
def test_exactly_once_clean_restarts_are_exact(cluster: Cluster, tmp_path: Path) -> None:
    run = FaustRun(cluster, tmp_path, exactly_once=True)
    run.run_to_end("state-1", produce=240)
    run.assert_exact_output()

    # Restored from a changelog written in transactions (read_committed), then from
    # the same changelog compacted. Each restore takes faust 10 s more than at least
    # once: its reader never receives the commit marker that ends each changelog
    # partition, so it waits for two 5 s polls to come back empty before it checks its
    # position against the high watermark (faust/tables/recovery.py, detect_aborted_tx).
    run.run_to_end("state-2", produce=120)
    run.assert_exact_output()
    wait_compacted(run)
    run.run_to_end("state-3", produce=120)
    run.assert_exact_output()
    run.assert_changelog_compacted()


def test_exactly_once_output_is_sent_outside_transactions(cluster: Cluster, tmp_path: Path) -> None:
    """faust-streaming 0.15.3's bug (1), as the log shows it: the changelog partitions
    hold transactional batches closed by commit markers, the output partitions hold
    neither. When this fails on the output's side, faust has fixed the bug: assert
    exact output after SIGKILL in the test below instead of what it asserts now."""
    run = FaustRun(cluster, tmp_path, exactly_once=True)
    run.run_to_end("state-1", produce=120)
    run.assert_exact_output()

    changelog = cluster.batches(run.changelog)
    data = [b for b in changelog if not b.control]
    assert data and all(b.transactional for b in data), "the table's writes are transactional"
    assert {b.marker for b in changelog if b.control} == {"commit"}
    assert {b.partition for b in changelog if b.control} == {b.partition for b in data}

    output = cluster.batches(OUTPUT)
    assert sum(b.records for b in output) == len(run.produced)
    assert not any(b.transactional or b.control for b in output), (
        "the output is written in transactions now: faust-streaming fixed sending to "
        "topics it does not consume; tighten the SIGKILL test to exact output"
    )


@pytest.mark.slow
def test_exactly_once_after_sigkill_keeps_counts_in_order(cluster: Cluster, tmp_path: Path) -> None:
    """A worker killed with SIGKILL in the middle of a transaction, and its successor.

    What holds, given bugs (1) to (3): the successor's producers fence the killed ones,
    whose open transactions end aborted; each user's output counts up in order but for
    one step back at most; the table and the output end on the same count per user.
    That count is over by at most one per input partition: each partition's transaction
    commits on its own timer, and its last commit may hold the table write of the one
    event then in flight without that event's offset (bug 2), so the event is counted
    again. It may also be under, by the table writes still in faust's send buffer when
    the last commit took their events' offsets (bug 3): those writes end aborted and
    their events are not read again. Then only the top counts are missing. Apache Kafka
    4.4 shows this too: one run in eight beside two busy loops ended user-7 a count short.
    What does not hold: the output may repeat counts. They are sent outside the
    transactions, so an aborted transaction does not take them back. That is one step back
    per user, to where its partition's last commit left the table.
    """
    run = FaustRun(cluster, tmp_path, exactly_once=True)
    app = run.start("state-1", delay_ms=30)
    try:
        app.wait_for("become ready", lambda: app.logged("[^Worker]: Ready"))
        run.produce(240)
        app.wait_for(
            "commit a quarter of its input", lambda: sum(cluster.committed(run.app_id, INPUT)) >= 60
        )
        kill_inside_a_transaction(cluster, app, run.changelog)
        killed_at = time.monotonic()
    finally:
        app.ensure_stopped()
    assert sum(cluster.committed(run.app_id, INPUT)) < len(run.produced), "killed too late"
    assert "abort" not in markers(cluster, run.changelog)

    app = run.start("state-1")
    try:
        app.wait_for("become ready", lambda: app.logged("[^Worker]: Ready"))
        # Fenced, not timed out: faust's transactional ids are fixed per partition, so
        # the successor's producers abort what the killed ones left open as they
        # start, well within aiokafka's default transaction.timeout.ms of 60 s.
        assert "abort" in markers(cluster, run.changelog)
        assert time.monotonic() - killed_at < 60
        # Bounded by aiokafka's transaction.timeout.ms (60 s) and some: a transaction the
        # killed instance left open holds the commit until it is fenced or timed out, and
        # one run beside another test worker took more than 45 s here.
        app.wait_for(
            "commit the end of its input", cluster.caught_up(run.app_id, INPUT), timeout=90
        )
        assert app.terminate() == 0, app.log()
    finally:
        app.ensure_stopped()

    views = running_counts(key.decode() for key, _v, _ts in run.produced)
    got = run.output()
    table = run.table()
    assert got.keys() == views.keys() == table.keys()
    over = 0
    for user, want in views.items():
        counts = got[user]
        # In order: each count one more than the one before, but for at most one step
        # back, where the successor counts again what the killed worker had sent
        # outside its aborted transaction (bug 1): as many counts as that transaction
        # held, one or more depending on how far faust's commit timer had fallen behind.
        back = [(a, b) for a, b in pairwise(counts) if b != a + 1]
        assert len(back) <= 1 and all(b <= a for a, b in back), f"{user}: out of order {counts}"
        lost = set(want) - set(counts)
        assert all(n > counts[-1] for n in lost), f"{user}: lost {sorted(lost)} below the last"
        assert table[user] == counts[-1], f"{user}: table {table[user]}, output {counts[-1]}"
        over += max(table[user] - len(want), 0)
    assert over <= PARTITIONS, {user: table[user] - len(views[user]) for user in views}
