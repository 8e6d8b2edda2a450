from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest
from registryproc import broker_with_registry

from headrace.schema_registry import SchemaRegistryServer


@pytest.fixture
async def registry(broker: object) -> AsyncIterator[SchemaRegistryServer]:
    """A registry on a free port over the in-process broker."""
    async with SchemaRegistryServer(broker.bootstrap_servers, port=0) as server:  # type: ignore[attr-defined]
        yield server


@pytest.fixture
async def http(registry: SchemaRegistryServer) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=registry.url) as session:
        yield session


@pytest.fixture(scope="module")
def registry_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A broker process with the registry inside: (bootstrap, registry URL). For blocking
    clients and serdes: a registry in the test's own event loop could not answer them."""
    with broker_with_registry(tmp_path_factory.mktemp("registry-broker") / "data") as both:
        yield both


@pytest.fixture(scope="module")
def registry_url(registry_broker: tuple[str, str]) -> str:
    return registry_broker[1]
