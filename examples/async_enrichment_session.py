"""Orders priced by a web service: one aiohttp session for the whole App.

Orders arrive on ``orders`` keyed by customer, as JSON ``{"item": ...}``; each is priced
by ``GET {PRICE_SERVICE_URL}/prices/{item}`` (which answers ``{"price": ...}``), with up to
32 calls in flight per task, and leaves on ``priced-orders`` as ``{"item", "price"}``.

The calls share one ``aiohttp.ClientSession``: its connection pool keeps connections to
the service open from call to call. The App opens it when it starts, before the first
record, and closes it when it stops, after the last call (``App.lifespan``), so no
record meets a closed session and no ``Unclosed client session`` is reported at exit.

Run it with ``PRICE_SERVICE_URL=http://HOST:PORT headrace run
headrace.examples.async_enrichment_session:app`` (the topics ``orders`` and
``priced-orders`` must exist).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from headrace import App, Serdes, StreamsBuilder, Topology

ORDERS, PRICED = "orders", "priced-orders"


class PriceService:
    """Prices from a web service, through the session of the App it runs in."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._session: aiohttp.ClientSession | None = None

    async def open(self, app: App) -> AsyncIterator[None]:
        """The App's lifespan of the session: open while the App runs."""
        timeout = aiohttp.ClientTimeout(total=5)
        async with aiohttp.ClientSession(self.url, timeout=timeout) as session:
            self._session = session
            try:
                yield
            finally:
                self._session = None

    async def price(self, order: dict[str, Any]) -> dict[str, Any]:
        if self._session is None:
            raise RuntimeError("prices are asked for outside the App's lifespan")
        async with self._session.get(f"/prices/{order['item']}") as response:
            response.raise_for_status()
            answer = await response.json()
        return {**order, "price": answer["price"]}


prices = PriceService(os.environ.get("PRICE_SERVICE_URL", "http://127.0.0.1:8000"))


def build_topology() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(ORDERS, key_serde=Serdes.string(), value_serde=Serdes.json())
        .map_values_async(prices.price, concurrency=32, timeout=5.0, retries=2, name="price")
        .to(PRICED, key_serde=Serdes.string(), value_serde=Serdes.json())
    )
    return builder.build()


app = App("priced-orders", build_topology)
app.lifespan(prices.open)
