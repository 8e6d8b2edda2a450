from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from brokerproc import BrokerProcess

# Apache Kafka clusters (kafka_cluster_1, kafka_cluster_3); an S3 server (s3_server); the
# modules, longest first
pytest_plugins = ("apache_kafka", "s3_server", "suite_order")


@pytest.fixture(scope="module")
def broker_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker subprocess shared by the tests of one module."""
    with BrokerProcess(tmp_path_factory.mktemp("broker") / "data") as broker:
        yield broker


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[object]:
    """An in-process broker on a free port, for asyncio tests."""
    from headrace.log_broker import Broker

    async with Broker(tmp_path / "data", group_initial_rebalance_delay_ms=0) as running:
        yield running
