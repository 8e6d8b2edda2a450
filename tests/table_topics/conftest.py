"""The set-up the table-topic tests share: a broker that keeps tables (one per module), an
admin client of it, and a schema registry. A module changes its broker's flags by
defining ``broker_args``, or defines its own ``broker`` where it needs another kind.

Nothing here outlives a module: pytest-xdist hands whole modules to its workers.

The helpers that create table topics, produce to them and wait for their tables are in
``tests/table_topic_io.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from brokerproc import BrokerProcess
from confluent_kafka.admin import AdminClient
from registryproc import broker_with_registry


def _module_dir(request: pytest.FixtureRequest, factory: pytest.TempPathFactory) -> Path:
    """A fresh folder named after the requesting module, where its broker's log lands."""
    return factory.mktemp(request.path.stem)


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the module's broker keeps its tables."""
    return tmp_path_factory.mktemp("lake")


@pytest.fixture(scope="module")
def broker_args() -> tuple[str, ...]:
    """The broker's flags beyond ``--table-location``; a module overrides this."""
    return ()


@pytest.fixture(scope="module")
def broker(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    lake: Path,
    broker_args: tuple[str, ...],
) -> Iterator[BrokerProcess]:
    """``headrace broker --table-location <lake>``: its table writer follows every topic
    whose ``headrace.table.mode`` is set."""
    data = _module_dir(request, tmp_path_factory) / "data"
    with BrokerProcess(data, "--table-location", str(lake), *broker_args) as proc:
        yield proc


@pytest.fixture(scope="module")
def admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


@pytest.fixture(scope="module")
def registry(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The URL of a schema registry, run inside a broker of its own (without tables)."""
    with broker_with_registry(_module_dir(request, tmp_path_factory) / "data") as (_, url):
        yield url
