"""A broker process with the schema registry inside, and waiting for a server to listen."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from brokerproc import BrokerProcess, free_port


def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"exited with {proc.returncode}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port} after {timeout}s")


@contextmanager
def broker_with_registry(data_dir: Path, *extra_args: str) -> Iterator[tuple[str, str]]:
    """``headrace broker --schema-registry-listen``: yields (bootstrap, registry URL)."""
    port = free_port()
    with BrokerProcess(
        data_dir, "--schema-registry-listen", f"127.0.0.1:{port}", *extra_args
    ) as broker:
        assert broker.proc is not None
        wait_listening(port, broker.proc)
        yield broker.bootstrap, f"http://127.0.0.1:{port}"
