from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from brokerproc import BrokerProcess
from peers.harness import Cluster, peers_python


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A broker subprocess of its own, its cleaner quick to visit compacted logs, and
    the test's clients of it. The peers' interpreter is checked first: without it the
    test fails with what to run."""
    peers_python()
    with BrokerProcess(
        tmp_path / "data", "--log-cleaner-backoff-ms", "200", "--fsync", "never"
    ) as broker:
        running = Cluster(broker.bootstrap)
        try:
            yield running
        finally:
            running.close()
