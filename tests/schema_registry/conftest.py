from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

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
