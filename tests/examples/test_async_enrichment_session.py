"""The session example under ``headrace run`` against the built-in broker and a real
HTTP price service: orders are priced through one session whose connections are reused
from call to call, and the App closes it on SIGTERM, so nothing reports an unclosed
session or connector at exit."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from brokerproc import BrokerProcess

from headrace.examples.async_enrichment_session import ORDERS, PRICED

ROOT = Path(__file__).resolve().parents[2]
PRICES = {"apple": 3, "pear": 5, "plum": 7}


class PriceServer:
    """The price service: answers ``/prices/{item}``, noting which client connection
    (its port) each request came on."""

    def __init__(self) -> None:
        self.peers: list[int] = []
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def _price(self, request: web.Request) -> web.Response:
        assert request.transport is not None
        self.peers.append(request.transport.get_extra_info("peername")[1])
        return web.json_response({"price": PRICES[request.match_info["item"]]})

    async def __aenter__(self) -> PriceServer:
        app = web.Application()
        app.router.add_get("/prices/{item}", self._price)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = self.runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[BrokerProcess]:
    with BrokerProcess(tmp_path / "data", "--fsync", "never") as running:
        admin = AIOKafkaAdminClient(bootstrap_servers=running.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(ORDERS, 2, 1), NewTopic(PRICED, 2, 1)])
        finally:
            await admin.close()
        yield running


async def _send(bootstrap: str, orders: list[tuple[str, str]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for customer, item in orders:
            await producer.send(ORDERS, json.dumps({"item": item}).encode(), key=customer.encode())
        await producer.flush()
    finally:
        await producer.stop()


async def _read(consumer: AIOKafkaConsumer, want: int, wait: float = 60) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + wait
    while len(got) < want and time.monotonic() < deadline:
        for records in (await consumer.getmany(timeout_ms=300)).values():
            got += [json.loads(r.value) for r in records]
    assert len(got) >= want, f"only {len(got)} of {want} priced orders within {wait}s"
    return got


@pytest.mark.slow
async def test_orders_are_priced_through_one_session_closed_at_exit(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    async with PriceServer() as prices:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("HEADRACE_")},
            "PRICE_SERVICE_URL": prices.url,
            "HEADRACE_BOOTSTRAP_SERVERS": broker.bootstrap,
            "HEADRACE_STATE_DIR": str(tmp_path / "state"),
            "HEADRACE_COMMIT_INTERVAL_MS": "200",
        }
        app = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "headrace", "run",
            "headrace.examples.async_enrichment_session:app", "--status-interval", "0",
            env=env, cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        consumer = AIOKafkaConsumer(
            PRICED, bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            await _send(broker.bootstrap, [(f"c{i}", "apple") for i in range(10)])
            first = await _read(consumer, 10)
            first_peers = set(prices.peers)
            await _send(
                broker.bootstrap, [(f"c{i}", "pear" if i % 2 else "plum") for i in range(10)]
            )
            second = await _read(consumer, 10)
            second_peers = set(prices.peers[10:])
        finally:
            await consumer.stop()
            if app.returncode is None:
                app.send_signal(signal.SIGTERM)
            out, err = await asyncio.wait_for(app.communicate(), 60)
    stdout, stderr = out.decode(), err.decode()
    assert app.returncode == 0, stdout + stderr
    assert sorted(o["price"] for o in first) == [3] * 10
    assert sorted(o["price"] for o in second) == [5] * 5 + [7] * 5
    # Later calls went over connections the earlier ones opened: one pool for all calls.
    assert first_peers & second_peers, (first_peers, second_peers)
    assert "stopped cleanly" in stdout
    assert "Unclosed" not in stderr, stderr  # neither client session nor connector
