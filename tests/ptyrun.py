"""Run the ``headrace`` command with its stderr on a pseudo-terminal, as a user at a
terminal runs it, and read what the terminal was shown."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_on_terminal(
    argv: list[str], stdout: Path | None = None, timeout: float = 120
) -> tuple[int, str]:
    """(exit code, what the terminal showed): stderr always on the terminal; stdout on
    it too unless ``stdout`` names a file to write the records to."""
    master, slave = pty.openpty()
    out = open(stdout, "wb") if stdout is not None else None  # noqa: SIM115 - closed below
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "headrace", *argv],
            stdin=subprocess.DEVNULL,
            stdout=out if out is not None else slave,
            stderr=slave,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    finally:
        os.close(slave)
        if out is not None:
            out.close()
    shown = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal's last end
                break
            if not chunk:
                break
            shown += chunk
        else:
            raise AssertionError(f"headrace {' '.join(argv)} ran over {timeout} s")
        return proc.wait(30), shown.decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        os.close(master)


def run_piped(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headrace", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
