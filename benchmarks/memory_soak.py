"""Resident memory of an application and of the broker over a long run at half load.

One run starts the built-in broker (a subprocess, fsync on), measures the windowed
workload's maximum rate (``latency.py``'s flood: 200,000 records through the
application, from the group turning stable to all of them committed) unless
``--max-rate`` gives it, then runs for ``--seconds``:

- the application: the windowed count of ``runtime_vs_peers.py`` (1,000 users, tumbling
  1-minute windows on the default store: RocksDB, cached, changelogged), at-least-once;
- a load generator: a librdkafka producer paced to ``--load`` (0.5) of the maximum,
  event time the wall clock, so old windows expire and their segments are dropped.

Every ``--interval`` seconds the resident set size (``VmRSS``) of both processes is
sampled, with the input's end offsets and the group's committed offsets (the lag shows
the application keeps up; a growing lag would make a memory figure meaningless), and
the application's memory figures from its ``/metrics``: RocksDB's block cache (usage,
pinned), memtables and table readers, the C heap's bytes in use and size (glibc
``mallinfo2``) and Python's allocated blocks. RocksDB's share of the RSS is the
cache's usage (memtables are charged to it) plus the table readers; the RSS less that
share is what a leak would show in. The broker's C heap and Python blocks come from its
``/metrics`` (``--metrics-listen``) the same way. The samples go to ``PREFIX.csv`` and a plot over
time to ``PREFIX.svg`` (drawn here, no plotting library needed), and a summary line
per figure: its value at the end of the warm-up (``--warmup`` seconds), the highest
after it, the last, and the growth from the first to the highest.
``--max-growth-mb`` makes the run exit non-zero when either process grew by more
(the test with a one-minute soak uses it).

Run: ``.venv/bin/python benchmarks/memory_soak.py [--seconds 3600] [--load 0.5]
[--max-rate N] [--interval 10] [--warmup 300] [--out memory-soak]``; ``--replot CSV``
(with the run's ``--max-rate``, ``--load`` and ``--warmup``) redraws ``--out``'s plot
and prints the summary from a run's samples. ``--trace broker|app|both
[--trace-every 120]`` runs that process under ``memory_trace.py`` (tracemalloc and
live objects by type, reports in ``PREFIX-trace-broker/`` and ``-app/``): for finding
what grows, not for figures, since tracing slows the process down. ``--broker-env
NAME=VALUE`` (repeatable) sets a variable for the broker alone (glibc's ``MALLOC_``
tunables, say).
The same file is the program the generator runs (``--role generator``).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import pathlib
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from bench_broker import free_port
from broker_throughput import wait_listening
from latency import Bench, record
from runtime_vs_peers import ROOT, stop

# The input and output keep two minutes of records (in 16 MiB segments), so an hour at
# tens of thousands of records a second stays within a few GiB of disk; the broker's
# retention pass runs every 30 s and is part of what is measured.
TOPIC_RETENTION = {"retention.ms": "120000", "segment.bytes": str(16 << 20)}
RETENTION_CHECK_MS = 30_000
# The application's memory figures (its /metrics, ``streams/runtime/_memory_metrics.py``)
# sampled with RSS: column -> metric name. RocksDB's memtables are charged to the block
# cache, so its share of the RSS is the cache's usage plus the table readers.
APP_FIGURES = {
    "block_cache_mb": "headrace_streams_rocksdb_block_cache_usage_bytes",
    "block_cache_pinned_mb": "headrace_streams_rocksdb_block_cache_pinned_usage_bytes",
    "memtables_mb": "headrace_streams_rocksdb_memtable_bytes",
    "table_readers_mb": "headrace_streams_rocksdb_table_readers_bytes",
    "malloc_in_use_mb": "headrace_streams_malloc_in_use_bytes",
    "malloc_heap_mb": "headrace_streams_malloc_heap_bytes",
    "python_blocks": "headrace_streams_python_allocated_blocks",
}
# The broker's (``headrace broker --metrics-listen``, ``headrace.base.memory``).
BROKER_FIGURES = {
    "broker_malloc_in_use_mb": "headrace_broker_malloc_in_use_bytes",
    "broker_malloc_heap_mb": "headrace_broker_malloc_heap_bytes",
    "broker_python_blocks": "headrace_broker_python_allocated_blocks",
}
FIELDS = (
    "seconds",
    "broker_rss_mb",
    *BROKER_FIGURES,
    "app_rss_mb",
    "app_rocksdb_mb",
    "app_rss_minus_rocksdb_mb",
    *APP_FIGURES,
    "produced",
    "committed",
    "lag",
)
MIB = 1 << 20


def rss_mb(pid: int) -> float:
    """The resident set size of process ``pid`` in MiB, from ``/proc/PID/status``."""
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def scrape(port: int, columns: dict[str, str], timeout: float = 10) -> dict[str, float]:
    """``columns`` (column -> metric name) read from a Prometheus text exposition: block
    counts as they are, bytes in MiB; zero when a figure is not published."""
    url = f"http://127.0.0.1:{port}/metrics"
    with urllib.request.urlopen(url, timeout=timeout) as response:
        text = response.read().decode()
    wanted = {metric: column for column, metric in columns.items()}
    figures = dict.fromkeys(columns, 0.0)
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        column = wanted.get(name)
        if column is not None:
            scale = 1 if column.endswith("python_blocks") else MIB
            figures[column] = round(float(value) / scale, 1)
    return figures


def app_figures(port: int, timeout: float = 10) -> dict[str, float]:
    """The application's memory figures, read from its ``/metrics``."""
    figures = scrape(port, APP_FIGURES, timeout)
    figures["app_rocksdb_mb"] = round(figures["block_cache_mb"] + figures["table_readers_mb"], 1)
    return figures


def traced(cmd: list[str], out: str, every: float, frames: int) -> list[str]:
    """``cmd`` (a Python program) run under ``memory_trace.py``: tracemalloc on (with
    ``frames`` frames; 0: off, only live objects and containers, at full speed), its
    growth written to ``out`` every ``every`` seconds. For finding, not measuring."""
    tracer = str(pathlib.Path(__file__).with_name("memory_trace.py"))
    options = ["--out", out, "--every", str(every), "--frames", str(frames)]
    return [cmd[0], tracer, *options, "--", *cmd[1:]]


# -- the load generator ------------------------------------------------------------------


def run_generator(args: argparse.Namespace) -> None:
    """Send ``--rate`` records a second until SIGTERM, paced by the clock."""
    from confluent_kafka import Producer

    stopping = False

    def request_stop(*_: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, request_stop)
    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "partitioner": "murmur2_random",
        }
    )
    started = time.perf_counter()
    i = 0
    while not stopping:
        wait = started + i / args.rate - time.perf_counter()
        if wait > 0:
            producer.poll(min(wait, 0.1))
            continue
        key, value, ts = record(i, time.time())
        try:
            producer.produce(args.topic, value, key, timestamp=ts)
        except BufferError:
            producer.poll(0.01)
            continue
        i += 1
        if i % 64 == 0:
            producer.poll(0)
    producer.flush(60)
    print(f"sent {i}", flush=True)


# -- the plot ------------------------------------------------------------------------------


def svg_plot(rows: Sequence[dict[str, float]], title: str) -> str:
    """A line chart of both processes' RSS over time, with the application's RocksDB
    share, its RSS less that share, and its C heap's bytes in use, as an SVG document."""
    width, height, left, bottom, top, right = 860, 420, 60, 40, 30, 190
    xs = [r["seconds"] for r in rows]
    series: tuple[tuple[str, str, str], ...] = (
        ("broker_rss_mb", "broker", "#1f77b4"),
        ("app_rss_mb", "application", "#d62728"),
        ("app_rss_minus_rocksdb_mb", "app minus RocksDB", "#ff7f0e"),
        ("app_rocksdb_mb", "app's RocksDB", "#2ca02c"),
        ("malloc_in_use_mb", "app's C heap in use", "#9467bd"),
        ("broker_malloc_in_use_mb", "broker's C heap in use", "#17becf"),
    )
    series = tuple(s for s in series if s[0] in rows[0])  # older samples lack the broker's
    top_mb = max(max(r[name] for r in rows) for name, _l, _c in series) * 1.1 or 1.0
    span = max(xs[-1], 1.0)

    def point(x: float, y: float) -> str:
        px = left + x / span * (width - left - right)
        py = height - bottom - y / top_mb * (height - top - bottom)
        return f"{px:.1f},{py:.1f}"

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="18" font-size="14">{title}</text>',
    ]
    for i in range(6):
        mb, secs = top_mb * i / 5, span * i / 5
        y = point(0, mb).split(",")[1]
        x = point(secs, 0).split(",")[0]
        parts.append(
            f'<line x1="{left}" y1="{y}" x2="{width - right}" y2="{y}" stroke="#ddd"/>'
            f'<text x="{left - 6}" y="{y}" text-anchor="end">{mb:.0f}</text>'
            f'<text x="{x}" y="{height - bottom + 16}" text-anchor="middle">{secs / 60:.0f}</text>'
        )
    parts.append(
        f'<text x="{(width - right + left) / 2}" y="{height - 6}" text-anchor="middle">'
        "minutes</text>"
        f'<text x="14" y="{height / 2}" transform="rotate(-90 14 {height / 2})" '
        'text-anchor="middle">MiB</text>'
    )
    for n, (name, label, colour) in enumerate(series):
        points = " ".join(point(r["seconds"], r[name]) for r in rows)
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{points}"/>'
            f'<text x="{width - right + 10}" y="{top + 20 + 18 * n}" fill="{colour}">'
            f"{label}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


# -- the soak ------------------------------------------------------------------------------


def growth(rows: Sequence[dict[str, float]], name: str, warmup: float) -> tuple[float, float]:
    """RSS at the end of the warm-up and the highest RSS after it."""
    after = [r for r in rows if r["seconds"] >= warmup] or list(rows[-1:])
    return after[0][name], max(r[name] for r in after)


def soak(
    bench: Bench, broker: tuple[int, int], rate: float, args: argparse.Namespace
) -> list[dict[str, float]]:
    """Run the application and the generator, sampling both processes; ``broker`` is
    the broker's process id and metrics port."""
    broker_pid, broker_metrics = broker
    from confluent_kafka.admin import ConfigResource

    cmd, source, output, app_id = bench.app("headrace", args.workload, "alos", "soak")
    if args.trace in ("app", "both"):
        cmd = traced(cmd, f"{args.out}-trace-app", args.trace_every, args.trace_frames)
    metrics_port = free_port()
    cmd += ["--http-port", str(metrics_port)]
    resources = [ConfigResource("TOPIC", t, set_config=TOPIC_RETENTION) for t in (source, output)]
    for future in bench.harness.admin.alter_configs(resources).values():
        future.result(30)
    app_log = bench.workdir / "soak-app.log"
    with open(app_log, "wb") as log:
        app = subprocess.Popen(
            cmd, stdout=log, stderr=log, cwd=ROOT, env={**os.environ, "PYTHONWARNINGS": "ignore"}
        )
    generator: subprocess.Popen[bytes] | None = None
    rows: list[dict[str, float]] = []
    try:
        deadline = time.monotonic() + 120
        while not bench.harness.stable(app_id):
            if app.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the application did not join:\n{app_log.read_text()[-3000:]}")
            time.sleep(0.1)
        generator = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--role",
                "generator",
                "--bootstrap",
                bench.bootstrap,
                "--topic",
                source,
                "--rate",
                str(rate),
            ],
            cwd=ROOT,
        )
        started = time.monotonic()
        with open(f"{args.out}.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, FIELDS)
            writer.writeheader()
            while True:
                elapsed = time.monotonic() - started
                for proc, what in ((app, "application"), (generator, "generator")):
                    if proc.poll() is not None:
                        raise RuntimeError(f"the {what} exited with {proc.returncode}")
                produced = sum(bench.harness.ends(source))
                committed = sum(bench.harness.committed(app_id, source))
                row = {
                    "seconds": round(elapsed, 1),
                    "broker_rss_mb": round(rss_mb(broker_pid), 1),
                    "app_rss_mb": round(rss_mb(app.pid), 1),
                    # A traced application answers slowly (tracemalloc on every allocation).
                    **app_figures(metrics_port, 120 if args.trace in ("app", "both") else 10),
                    **scrape(broker_metrics, BROKER_FIGURES, 120),
                    "produced": produced,
                    "committed": committed,
                    "lag": produced - committed,
                }
                row["app_rss_minus_rocksdb_mb"] = round(
                    row["app_rss_mb"] - row["app_rocksdb_mb"], 1
                )
                rows.append(row)
                writer.writerow(row)
                f.flush()
                print(
                    f"{elapsed / 60:6.1f} min  broker {row['broker_rss_mb']:7.1f} MiB  "
                    f"app {row['app_rss_mb']:7.1f} MiB (RocksDB {row['app_rocksdb_mb']:6.1f}, "
                    f"C heap {row['malloc_in_use_mb']:6.1f}, "
                    f"{row['python_blocks']:,.0f} Python blocks; broker's "
                    f"{row['broker_python_blocks']:,.0f})  lag {row['lag']:>8,}  "
                    f"load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
                if elapsed >= args.seconds:
                    break
                time.sleep(min(args.interval, args.seconds - elapsed + 0.01))
    finally:
        if generator is not None:
            stop(generator)
        stop(app)
    return rows


def report(rows: Sequence[dict[str, float]], rate: float, args: argparse.Namespace) -> bool:
    """Write the plot and print the summary; False when RSS grew beyond the bound."""
    title = f"Memory at {rate:,.0f} records/s ({args.load:.0%} load), {args.workload} app"
    pathlib.Path(f"{args.out}.svg").write_text(svg_plot(rows, title))
    failed = False
    for name, label in (
        ("broker_rss_mb", "broker"),
        ("app_rss_mb", "application"),
        ("app_rocksdb_mb", "app RocksDB"),
        ("app_rss_minus_rocksdb_mb", "app - RocksDB"),
        ("malloc_in_use_mb", "app C heap"),
        ("python_blocks", "app Py blocks"),
        ("broker_malloc_in_use_mb", "broker C heap"),
        ("broker_python_blocks", "broker Py blocks"),
    ):
        if name not in rows[0]:
            continue  # samples from before the broker published its figures
        start, peak = growth(rows, name, args.warmup)
        grew = peak - start
        print(
            f"{label:<16} after warm-up {start:11,.1f}, highest {peak:11,.1f}, "
            f"at the end {rows[-1][name]:11,.1f}, growth {grew:+10,.1f}"
            + ("" if name.endswith("python_blocks") else " (MiB)")
        )
        if name in ("broker_rss_mb", "app_rss_mb"):
            failed |= args.max_growth_mb is not None and grew > args.max_growth_mb
    rate_seen = rows[-1]["produced"] / max(rows[-1]["seconds"], 1)
    print(
        f"offered {rate_seen:,.0f} records/s; lag at the end {rows[-1]['lag']:,.0f}; plot: {args.out}.svg"
    )
    return not failed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3600)
    parser.add_argument("--load", type=float, default=0.5)
    parser.add_argument("--max-rate", type=float, help="skip the flood: the maximum rate")
    parser.add_argument("--interval", type=float, default=10)
    parser.add_argument("--warmup", type=float, default=300)
    parser.add_argument("--out", default="memory-soak", help="PREFIX of the .csv and .svg")
    parser.add_argument("--max-growth-mb", type=float, help="fail above this growth")
    parser.add_argument(
        "--trace",
        choices=("broker", "app", "both"),
        help="run that process under memory_trace.py (reports in PREFIX-trace-*/)",
    )
    parser.add_argument(
        "--broker-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set in the broker's environment only (e.g. glibc's MALLOC_ tunables)",
    )
    parser.add_argument(
        "--broker-prefix",
        default="",
        metavar="COMMAND",
        help="run the broker under COMMAND, e.g. 'heaptrack -o broker' (its RSS is then "
        "COMMAND's; the broker's own figures come from its metrics)",
    )
    parser.add_argument("--trace-every", type=float, default=120, help="seconds a report")
    parser.add_argument(
        "--trace-frames",
        type=int,
        default=12,
        help="tracemalloc's frames; 0 leaves it off (live objects and containers only)",
    )
    parser.add_argument("--workload", choices=("windowed", "stateless"), default="windowed")
    parser.add_argument("--role", choices=("generator",))
    parser.add_argument("--bootstrap")
    parser.add_argument("--topic")
    parser.add_argument("--rate", type=float, default=0)
    parser.add_argument("--replot", metavar="CSV", help="redraw and summarise a run's samples")
    args = parser.parse_args()
    if args.role == "generator":
        run_generator(args)
        return
    if args.replot:
        if args.max_rate is None:
            parser.error("--replot needs the run's --max-rate (and --load) for the title")
        with open(args.replot, newline="") as f:
            rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
        sys.exit(0 if report(rows, args.max_rate * args.load, args) else 1)
    # SIGTERM unwinds like Ctrl-C, so the broker, application and generator are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="headrace-soak-") as tmp:
        workdir = pathlib.Path(tmp)
        port, broker_metrics = free_port(), free_port()
        properties = workdir / "server.properties"
        properties.write_text(
            f"listeners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={workdir / 'data'}\n"
            "num.partitions=4\ngroup.initial.rebalance.delay.ms=0\n"
            f"log.retention.check.interval.ms={RETENTION_CHECK_MS}\n"
        )
        broker_log = open(workdir / "broker.log", "wb")  # noqa: SIM115 - the child's output
        broker_cmd = [sys.executable, "-m", "headrace", "broker", "--config", str(properties)]
        broker_cmd += ["--metrics-listen", f"127.0.0.1:{broker_metrics}"]
        if args.trace in ("broker", "both"):
            broker_cmd = traced(
                broker_cmd, f"{args.out}-trace-broker", args.trace_every, args.trace_frames
            )
        broker = subprocess.Popen(
            shlex.split(args.broker_prefix) + broker_cmd,
            stdout=broker_log,
            stderr=broker_log,
            env={**os.environ, **dict(v.split("=", 1) for v in args.broker_env)},
            start_new_session=bool(args.broker_prefix),
        )
        try:
            # A traced broker starts slowly: tracemalloc follows every import's allocations.
            wait_listening(port, broker, 180 if args.trace in ("broker", "both") else 30)
            bench = Bench(f"127.0.0.1:{port}", workdir, args.seconds, 0)
            top = args.max_rate or bench.flood("headrace", args.workload, "alos")
            rate = top * args.load
            print(f"soak at {rate:,.0f} records/s ({args.load:.0%} of {top:,.0f})", flush=True)
            rows = soak(bench, (broker.pid, broker_metrics), rate, args)
            bench.harness.close()
        finally:
            if args.broker_prefix:
                # The prefix's process is not the broker: signal its whole group.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(broker.pid, signal.SIGTERM)
            stop(broker)
            broker_log.close()
    sys.exit(0 if report(rows, rate, args) else 1)


if __name__ == "__main__":
    main()
