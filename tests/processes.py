"""Servers the tests start as processes: stopped by their pid, their logs read from the end.

Every server helper (Apache Kafka nodes, S3Proxy, a Spark standalone cluster) stops the
same way, so it is written once here: SIGTERM to each process still running, all at
once (a cluster's members may need each other to shut down cleanly), then a wait, and
SIGKILL for whoever outlives the grace.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Self


def terminate(procs: Iterable[subprocess.Popen[bytes]], grace: float) -> None:
    """SIGTERM every process of ``procs`` that runs, then wait for each; SIGKILL one
    that has not exited ``grace`` seconds into its wait."""
    procs = list(procs)
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)


def log_tail(path: Path, chars: int) -> str:
    """The last ``chars`` characters of a process's log; empty before it wrote one."""
    try:
        return path.read_text(errors="replace")[-chars:]
    except FileNotFoundError:
        return ""


class StartStop:
    """``with Server(...) as server:`` for a helper with ``start() -> self`` and ``stop()``."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
