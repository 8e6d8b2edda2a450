from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The helpers next to this file (runtime_apps, rtprocs) are imported by name.
sys.path.insert(0, str(Path(__file__).parent))

from rtprocs import Instance, TansuProcess


@pytest.fixture(scope="module")
def tansu() -> Iterator[TansuProcess]:
    broker = TansuProcess()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def instances(tmp_path: Path) -> Iterator[list[Instance]]:
    started: list[Instance] = []
    yield started
    for instance in started:
        if instance.proc is not None and instance.proc.poll() is None:
            instance.proc.kill()
            instance.proc.wait(10)
