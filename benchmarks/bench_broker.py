"""The built-in broker as a subprocess of a benchmark: started on a free loopback port
in a directory the benchmark owns, its output in ``broker.log`` there, stopped with
SIGTERM when the benchmark is done."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def broker_process(
    workdir: Path, *options: str, fsync: str = "never", timeout: float = 60
) -> Iterator[str]:
    """Run ``headrace broker`` on ``workdir/data`` with ``options`` (group rebalances
    not delayed); yield its bootstrap address once it accepts connections."""
    port = free_port()
    with open(workdir / "broker.log", "wb") as log:
        broker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "headrace",
                "broker",
                "--data-dir",
                str(workdir / "data"),
                "--listen",
                f"127.0.0.1:{port}",
                "--group-initial-rebalance-delay-ms",
                "0",
                "--fsync",
                fsync,
                *options,
            ],
            stdout=log,
            stderr=log,
            cwd=ROOT,
        )
        try:
            wait_port(port, timeout, broker)
            yield f"127.0.0.1:{port}"
        finally:
            broker.send_signal(signal.SIGTERM)
            broker.wait(30)


def wait_port(
    port: int, timeout: float = 60, broker: subprocess.Popen[bytes] | None = None
) -> None:
    """Wait until something accepts connections on loopback ``port`` (the broker, or a
    service beside it), failing early if ``broker`` has exited."""
    deadline = time.monotonic() + timeout
    while True:
        if broker is not None and broker.poll() is not None:
            raise RuntimeError(f"the broker exited with {broker.returncode}; see broker.log")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on port {port}; see broker.log") from None
            time.sleep(0.05)
