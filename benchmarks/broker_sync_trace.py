"""Where a many-partition produce's wall time goes: a trace of the broker's fsyncs.

    .venv/bin/python benchmarks/broker_sync_trace.py [--partitions 1000] [--records 300000]
        [--fsync always|never] [--cprofile FILE] [--sync-workers N] [--sync-slices N]
        [--in-flight N]
    .venv/bin/python benchmarks/broker_sync_trace.py --disk-only

Runs one headrace broker whose group syncer is traced, fills a topic through
``kcat -P`` (acks=all, the settings of ``broker_partitions.py``), and prints: the produce
requests and records per request, the fsyncs a second and the time of each, how many
ran at once, how long a request waited for its sync, and the broker's CPU share (its
event loop's thread apart from the fsync threads). ``--cprofile`` also writes a profile
of the broker's event loop; ``--sync-workers`` and ``--in-flight`` change the two bounds
on how many fsyncs can run at once (the syncer's 32, and the requests one connection
may have in flight, 64), ``--sync-slices`` how many worker threads share a round. ``--disk-only`` measures the machine's own rate of
fsyncs of distinct files instead, in the current directory (run it where the broker's
data would be).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from statistics import median, quantiles
from typing import Any

from broker_partitions import create_topic, kcat_environment, produce, write_input
from broker_throughput import free_port, wait_listening


def apply_settings(settings: argparse.Namespace) -> None:
    """Set the syncer's worker threads and the requests a connection may have in
    flight, where given: the two bounds on how many fsyncs can run at once."""
    from headrace.log_broker import _broker
    from headrace.log_broker._config import BrokerConfig
    from headrace.log_broker.storage import _syncer

    patches: list[tuple[object, str, object]] = []
    if settings.sync_workers is not None or settings.sync_slices is not None:
        init = _syncer.GroupSyncer.__init__
        workers, slices = settings.sync_workers or 32, settings.sync_slices

        def with_workers(self: Any, *, enabled: bool = True, **_: Any) -> None:
            init(self, enabled=enabled, max_workers=workers, slices=slices)

        patches.append((_syncer.GroupSyncer, "__init__", with_workers))
    if settings.in_flight is not None:
        in_flight = settings.in_flight

        def config(**given: Any) -> Any:
            return BrokerConfig(**{"max_in_flight_per_connection": in_flight, **given})

        patches.append((_broker, "BrokerConfig", config))
    for owner, name, value in patches:
        setattr(owner, name, value)


def serve(
    trace_path: Path,
    profile_path: str | None,
    settings: argparse.Namespace,
    broker_args: list[str],
) -> int:
    """Run the broker with its syncer traced; write the trace when it stops."""
    from headrace.cli import main as headrace_main
    from headrace.log_broker.storage import _fsyncs, _syncer

    syncs: list[tuple[float, float, int]] = []  # start, seconds, thread
    waits: list[tuple[float, float, int]] = []  # start, seconds, logs
    # One per sync_files call: when its last fsync ended, how long until the calling
    # thread ran Python again (taking the GIL back), how many files.
    slices: list[tuple[float, float, int]] = []
    sync_files = _fsyncs.sync_files

    def traced_sync_files(ops: Any, threads: int = 1) -> Any:
        outcomes = sync_files(ops, threads)
        resumed = time.monotonic()
        if outcomes:
            done = max(o.started + o.seconds for o in outcomes)
            slices.append((done, resumed - done, len(outcomes)))
        return outcomes

    _fsyncs.sync_files = traced_sync_files
    syncer = _syncer.GroupSyncer
    note_sync, sync_many = syncer._note_sync, syncer.sync_many

    # The syncer reports each log's fsyncs as they ran (time.monotonic, which on Linux
    # is perf_counter's clock too, across processes).
    def traced_note_sync(self: Any, started: float, took: float) -> None:
        note_sync(self, started, took)
        syncs.append((started, took, threading.get_ident()))

    async def traced_sync_many(self: Any, logs: Iterable[Any]) -> Any:
        logs = list(logs)
        started = time.perf_counter()
        try:
            return await sync_many(self, logs)
        finally:
            waits.append((started, time.perf_counter() - started, len(logs)))

    traced: dict[str, object] = {"_note_sync": traced_note_sync, "sync_many": traced_sync_many}
    for name, wrapper in traced.items():
        setattr(syncer, name, wrapper)
    apply_settings(settings)
    profiler = None
    if profile_path is not None:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    try:
        return headrace_main(["broker", *broker_args])
    finally:
        if profiler is not None and profile_path is not None:
            profiler.disable()
            profiler.dump_stats(profile_path)
        trace = {"syncs": syncs, "waits": waits, "slices": slices}
        trace_path.write_text(json.dumps(trace))


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user and system) of each of the process's threads, by thread id."""
    import psutil

    return {t.id: t.user_time + t.system_time for t in psutil.Process(pid).threads()}


def concurrency(intervals: list[tuple[float, float]]) -> tuple[float, int]:
    """The mean number of intervals running while any runs, and the most at once."""
    events = sorted([(s, 1) for s, _ in intervals] + [(s + d, -1) for s, d in intervals])
    running = peak = 0
    busy = 0.0
    last = events[0][0] if events else 0.0
    for at, step in events:
        if running:
            busy += at - last
        running += step
        peak = max(peak, running)
        last = at
    total = sum(d for _, d in intervals)
    return (total / busy if busy else 0.0), peak


def spread(values: list[float]) -> str:
    """Median, p90 and max, in milliseconds."""
    if not values:
        return "none"
    p90 = quantiles(values, n=10)[-1] if len(values) > 1 else values[0]
    return f"median {median(values) * 1e3:.1f} ms, p90 {p90 * 1e3:.1f} ms, max {max(values) * 1e3:.1f} ms"


def report(
    trace: dict[str, list[list[float]]],
    span: tuple[float, float],
    records: int,
    cpu: dict[str, float],
) -> None:
    """Print the trace's summary for the requests in ``span`` (perf_counter seconds)."""
    begin, end = span

    def within(rows: list[list[float]]) -> list[list[float]]:
        return [row for row in rows if begin <= row[0] <= end]

    syncs, waits = (within(trace[k]) for k in ("syncs", "waits"))
    wall = end - begin
    requests = len(waits)
    print(f"wall {wall:.2f} s, {records:,} records, {records / wall:,.0f} rec/s")
    print(
        f"produce requests waiting for a sync: {requests:,}"
        f" ({records / requests if requests else 0:,.0f} records a request,"
        f" {requests / wall:,.0f} a second)"
    )
    if syncs:
        mean, peak = concurrency([(row[0], row[1]) for row in syncs])
        busy = sum(row[1] for row in syncs)
        print(
            f"fsyncs: {len(syncs):,} ({len(syncs) / wall:,.0f} a second), each {spread([r[1] for r in syncs])};"
            f" {mean:.1f} at once on average while any ran, at most {peak}"
        )
        print(f"  fsync thread-seconds {busy:.2f} over a {wall:.2f} s wall")
    if waits:
        print(f"a request's wait for its sync: {spread([w[1] for w in waits])}")
    calls = within(trace.get("slices", []))
    if calls:
        print(
            f"sync calls (one GIL release each): {len(calls):,}, files each median"
            f" {median(c[2] for c in calls):.0f}; from a call's last fsync back to Python"
            f" (the GIL taken back) {spread([c[1] for c in calls])}"
        )
    print(
        f"broker CPU: event loop thread {cpu['loop']:.2f} s ({cpu['loop'] / wall:.0%} of the wall),"
        f" other threads {cpu['others']:.2f} s"
    )


def disk_only(directory: Path, threads: int, files: int = 1000, syncs: int = 5000) -> float:
    """``fdatasync``s a second of the machine alone: ``threads`` threads, each appending
    16 KB (about one partition's batch) to one of ``files`` files and syncing it."""
    fds = [
        os.open(directory / f"f{i}", os.O_CREAT | os.O_WRONLY | os.O_APPEND) for i in range(files)
    ]
    work: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(syncs):
        work.put(fds[i % files])
    data = b"x" * 16_000

    def sync_files() -> None:
        while True:
            try:
                fd = work.get_nowait()
            except queue.Empty:
                return
            os.write(fd, data)
            os.fdatasync(fd)

    started = time.perf_counter()
    workers = [threading.Thread(target=sync_files) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    for fd in fds:
        os.close(fd)
    return syncs / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--fsync", choices=("always", "never"), default="always")
    parser.add_argument("--cprofile", metavar="FILE", help="also profile the broker's event loop")
    parser.add_argument("--sync-workers", type=int, help="fsyncs at once (default 32)")
    parser.add_argument("--sync-slices", type=int, help="worker threads sharing a round")
    parser.add_argument("--in-flight", type=int, help="requests a connection may have in flight")
    parser.add_argument(
        "--disk-only",
        action="store_true",
        help="measure the machine's fdatasyncs a second from 8, 32 and 128 threads instead",
    )
    parser.add_argument("--serve", metavar="TRACE", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.serve:
        sys.exit(serve(Path(args.serve), args.cprofile, args, rest))
    if args.disk_only:
        with tempfile.TemporaryDirectory(prefix="sync-rate-", dir=".") as directory:
            for threads in (8, 32, 128):
                rate = disk_only(Path(directory), threads)
                print(f"{threads:>4} threads: {rate:,.0f} fdatasyncs a second", flush=True)
        return
    with tempfile.TemporaryDirectory(prefix="sync-trace-") as directory:
        folder = Path(directory)
        source, trace_path = folder / "records.txt", folder / "trace.json"
        write_input(source, args.records, args.size)
        env = kcat_environment(folder)
        port = free_port()
        (folder / "data").mkdir()
        command = [sys.executable, __file__, "--serve", str(trace_path)]
        if args.cprofile:
            command += ["--cprofile", str(Path(args.cprofile).resolve())]
        for flag, value in (
            ("--sync-workers", args.sync_workers),
            ("--sync-slices", args.sync_slices),
            ("--in-flight", args.in_flight),
        ):
            if value is not None:
                command += [flag, str(value)]
        command += ["--data-dir", str(folder / "data"), "--listen", f"127.0.0.1:{port}"]
        command += ["--fsync", args.fsync]
        broker = subprocess.Popen(command, cwd=folder)
        try:
            wait_listening(port, broker)
            bootstrap = f"127.0.0.1:{port}"
            create_topic(bootstrap, args.partitions)
            before = thread_cpu(broker.pid)
            began = time.perf_counter()
            produce(bootstrap, source, env)
            ended = time.perf_counter()
            after = thread_cpu(broker.pid)
        finally:
            broker.send_signal(signal.SIGTERM)
            broker.wait(300)
        used = {tid: after[tid] - before.get(tid, 0.0) for tid in after}
        loop = used.pop(broker.pid, 0.0)
        trace = json.loads(trace_path.read_text())
        print(
            f"{args.partitions:,} partitions, fsync {args.fsync};"
            f" load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
        )
        report(trace, (began, ended), args.records, {"loop": loop, "others": sum(used.values())})


if __name__ == "__main__":
    main()
