from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The helpers next to this file (runtime_apps, rtprocs) are imported by name.
sys.path.insert(0, str(Path(__file__).parent))

from brokerproc import BrokerProcess, TansuProcess
from rtprocs import Cluster, Instance


@pytest.fixture(scope="module", params=["builtin"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """A broker shared by the tests of one module: the built-in one unless a test
    asks for ``tansu`` with ``@pytest.mark.parametrize("cluster", [...], indirect=True)``."""
    if request.param == "tansu":
        tansu = TansuProcess()
        try:
            yield Cluster("tansu", tansu.bootstrap)
        finally:
            tansu.stop()
        return
    with BrokerProcess(tmp_path_factory.mktemp("broker") / "data", "--fsync", "never") as broker:
        yield Cluster("builtin", broker.bootstrap)


@pytest.fixture
def instances(tmp_path: Path) -> Iterator[list[Instance]]:
    started: list[Instance] = []
    yield started
    for instance in started:
        if instance.proc is not None and instance.proc.poll() is None:
            instance.proc.kill()
            instance.proc.wait(10)
