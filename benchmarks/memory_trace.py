"""Run a Python program with ``tracemalloc`` on and write, every few seconds, what its
memory grew by since the first report: a diagnostic for ``memory_soak.py``
(``--trace broker|app|both``), kept out of the product so no hot path pays for it.

Run: ``python benchmarks/memory_trace.py --out DIR [--every 120] [--frames 12] --
(-m MODULE | SCRIPT) [ARGS...]``. A thread of the traced process writes
``DIR/report-NNN.txt`` each ``--every`` seconds (and ``DIR/summary.csv``, one line a
report): RSS, Python's allocated blocks, the C heap (``headrace.base.memory``), the
traced total; then the allocation sites (by traceback) that grew most since the
first report and since the one before, and the live objects the collector tracks
counted by type, against the first report. The first report is the baseline, so set
``--every`` past the warm-up or read the later reports against each other.
"""

from __future__ import annotations

import collections
import gc
import os
import pathlib
import runpy
import sys
import threading
import time
import tracemalloc
from typing import Any

from headrace.base.memory import c_heap

TOP = 25
SHOWN_FRAMES = 8
_IGNORED = (
    tracemalloc.Filter(False, tracemalloc.__file__),
    tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
    tracemalloc.Filter(False, "<frozen importlib._bootstrap_external>"),
    tracemalloc.Filter(False, "<unknown>"),
)


def _rss_mb() -> float:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _types() -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    for obj in gc.get_objects():
        kind = type(obj)
        counts[f"{kind.__module__}.{kind.__qualname__}"] += 1
    return counts


def _sizes() -> dict[int, tuple[str, int]]:
    """The containers the collector tracks, by id: their type and length. A container
    that grows keeps its one block (its table is reallocated larger), so Python's
    block count stays flat while its bytes grow: this is what shows it."""
    sizes: dict[int, tuple[str, int]] = {}
    for obj in gc.get_objects():
        if isinstance(obj, dict | list | set | collections.deque | collections.OrderedDict):
            sizes[id(obj)] = (type(obj).__qualname__, len(obj))
    return sizes


def _grown(first: dict[int, tuple[str, int]], now: dict[int, tuple[str, int]]) -> list[str]:
    """The containers alive in both reports that grew most, with a sample of what they
    hold, so the owner can be recognised."""
    growth = sorted(
        (
            (n - first[i][1], i)
            for i, (kind, n) in now.items()
            if i in first and kind == first[i][0]
        ),
        reverse=True,
    )[:TOP]
    # (An id freed and reused by a new container of the same type reads as growth.)
    wanted = {i for _, i in growth}
    by_id = {id(obj): obj for obj in gc.get_objects() if id(obj) in wanted}
    lines = []
    for delta, i in growth:
        if delta <= 0:
            break
        obj = by_id.get(i)
        sample = ""
        if isinstance(obj, dict):
            sample = repr(list(obj.items())[-2:])[:300]
        elif obj is not None:
            sample = repr(list(obj)[-2:])[:300]
        holders = (
            [type(h).__qualname__ for h in gc.get_referrers(obj)[:4]] if obj is not None else []
        )
        lines.append(f"{delta:+9d}  {now[i][1]:9d}  {now[i][0]} held by {holders}: {sample}")
    return lines


def _site(stat: Any) -> str:
    frames = stat.traceback.format(limit=SHOWN_FRAMES, most_recent_first=True)
    head = f"{stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d} blocks"
    head += f" (now {stat.size / 1024:.1f} KiB in {stat.count})"
    return head + "\n" + "\n".join("      " + line.strip() for line in frames)


def _reporter(out: pathlib.Path, every: float) -> None:
    first: tuple[tracemalloc.Snapshot | None, collections.Counter[str]] | None = None
    first_sizes: dict[int, tuple[str, int]] = {}
    previous: tracemalloc.Snapshot | None = None
    tracing = tracemalloc.is_tracing()
    summary = out / "summary.csv"
    summary.write_text("seconds,rss_mb,python_blocks,c_heap_in_use_mb,c_heap_mb,traced_mb\n")
    started = time.monotonic()
    n = 0
    while True:
        time.sleep(every)
        snapshot = tracemalloc.take_snapshot().filter_traces(_IGNORED) if tracing else None
        types = _types()
        sizes = _sizes()
        in_use, heap = c_heap() or (0, 0)
        traced = tracemalloc.get_traced_memory()[0] if tracing else 0
        elapsed = time.monotonic() - started
        figures = (
            f"{elapsed:.0f},{_rss_mb():.1f},{sys.getallocatedblocks()},"
            f"{in_use / 2**20:.1f},{heap / 2**20:.1f},{traced / 2**20:.1f}"
        )
        with summary.open("a") as f:
            f.write(figures + "\n")
        lines = [f"at {elapsed:.0f} s: {figures}"]
        if first is None:
            first, first_sizes = (snapshot, types), sizes
        else:
            if snapshot is not None and first[0] is not None and previous is not None:
                # By line first (every path to one allocating line summed: steady growth
                # stands out from buffers in flight), then by whole traceback.
                lines.append("\n== allocating lines grown most since the first report ==")
                for stat in snapshot.compare_to(first[0], "lineno")[:TOP]:
                    if stat.size_diff > 0:
                        lines.append(
                            f"{stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d}  {stat}"
                        )
                for title, base in (
                    ("since the first report", first[0]),
                    ("since the last", previous),
                ):
                    lines.append(f"\n== allocation sites grown most {title} ==")
                    stats = snapshot.compare_to(base, "traceback")
                    lines += [_site(s) for s in stats[:TOP] if s.size_diff > 0]
            lines.append("\n== containers grown most since the first report ==")
            lines += _grown(first_sizes, sizes)
            lines.append("\n== live objects by type, against the first report ==")
            diff = collections.Counter(types)
            diff.subtract(first[1])
            for name, delta in diff.most_common(TOP):
                lines.append(f"{delta:+9d}  {types[name]:9d}  {name}")
        previous = snapshot
        (out / f"report-{n:03d}.txt").write_text("\n".join(lines) + "\n")
        n += 1


def main() -> None:
    argv = sys.argv[1:]
    options: dict[str, str] = {}
    while argv and argv[0] != "--":
        options[argv[0].lstrip("-")] = argv[1]
        argv = argv[2:]
    program = argv[1:]
    out = pathlib.Path(options["out"])
    out.mkdir(parents=True, exist_ok=True)
    frames = int(options.get("frames", "12"))
    if frames:  # --frames 0: object counts and container sizes only, at full speed
        tracemalloc.start(frames)
    reporter = threading.Thread(
        target=_reporter, args=(out, float(options.get("every", "120"))), daemon=True
    )
    reporter.start()
    if program[0] == "-m":
        sys.argv = [program[1], *program[2:]]
        runpy.run_module(program[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = program
        sys.path.insert(0, os.path.dirname(os.path.abspath(program[0])))
        runpy.run_path(program[0], run_name="__main__")


if __name__ == "__main__":
    main()
