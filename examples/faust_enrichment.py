"""A faust enrichment agent, ported: each order is completed with its customer's
record, fetched from a (simulated) remote service, many lookups in flight at once.

Faust runs ``concurrency=16`` copies of the agent and loses the order of results; here
the 16 copies run per partition and results leave per key in input order, and an
order's offset is committed only once its enriched record is out. A lookup that fails
three times goes to the processing error handler (the dead-letter topic, if set).

Orders are JSON ``{"customer": id, "amount": n}`` on ``orders``; enriched orders go to
``orders-enriched`` with the customer's ``name`` and ``tier`` added.

Run it with ``headrace run headrace.examples.faust_enrichment:app``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from headrace import AgentApp, AgentStream, Serdes

ORDERS, ENRICHED = "orders", "orders-enriched"
CUSTOMERS = {
    "c1": {"name": "Ada", "tier": "gold"},
    "c2": {"name": "Grace", "tier": "silver"},
}

app = AgentApp("order-enrichment")
orders = app.topic(ORDERS, key_serde=Serdes.string(), value_serde=Serdes.json())
enriched = app.topic(ENRICHED, key_serde=Serdes.string(), value_serde=Serdes.json())


async def fetch_customer(customer: str) -> dict[str, Any]:
    """Stands in for an HTTP call to a customer service (a few ms away)."""
    await asyncio.sleep(0.005)
    return CUSTOMERS.get(customer, {"name": None, "tier": "unknown"})


@app.agent(orders, sink=enriched, concurrency=16, retries=2, timeout=2.0)
async def enrich(stream: AgentStream) -> AsyncIterator[dict[str, Any]]:
    async for _order_id, order in stream:
        customer = await fetch_customer(order["customer"])
        yield {**order, **customer}
