"""The running applications the console was told about: their /health, /metrics and
/topology, asked over HTTP. An instance that does not answer is shown as unreachable,
never as an error page."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

TIMEOUT = aiohttp.ClientTimeout(total=3)
# The figures an app's page shows, summed over their labels unless grouped below.
_TOTALS = {
    "headrace_streams_records_consumed_total": "consumed",
    "headrace_streams_records_produced_total": "produced",
    "headrace_streams_consumer_lag": "lag",
    "headrace_streams_commits_total": "commits",
    "headrace_streams_rebalances_total": "rebalances",
    "headrace_streams_errors_total": "errors",
}
_PER_STORE = {
    "headrace_streams_restore_remaining_records": "restore_remaining",
    "headrace_streams_restored_records_total": "restored",
    "headrace_streams_store_keys": "keys",
}


class AppsReader:
    def __init__(self, urls: list[str]) -> None:
        self.urls = [url.rstrip("/") for url in urls]
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(timeout=TIMEOUT)

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def overview(self) -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(self.app(i) for i in range(len(self.urls)))))

    async def app(self, index: int) -> dict[str, Any]:
        url = self.urls[index]
        health, metrics, topology = await asyncio.gather(
            self._get(f"{url}/health", json=True),
            self._get(f"{url}/metrics"),
            self._get(f"{url}/topology", json=True),
        )
        return {
            "index": index,
            "url": url,
            "reachable": health is not None,
            "health": health,
            "metrics": summarise(metrics) if metrics else {},
            "topology": topology,
        }

    async def _get(self, url: str, json: bool = False) -> Any:
        assert self._session is not None
        try:
            async with self._session.get(url) as response:
                # /health answers 503 with the status of a failed instance: still shown
                if response.status not in (200, 503):
                    return None
                return await response.json() if json else await response.text()
        except (aiohttp.ClientError, TimeoutError, ValueError):
            return None


def summarise(exposition: str) -> dict[str, Any]:
    """The totals and per-store figures of an App's Prometheus exposition.

    >>> text = ('headrace_streams_consumer_lag{topic="t",partition="0"} 4\\n'
    ...         'headrace_streams_consumer_lag{topic="t",partition="1"} 3\\n'
    ...         'headrace_streams_store_keys{task="0_0",store="counts"} 7\\n')
    >>> figures = summarise(text)
    >>> figures["lag"], figures["stores"]
    (7.0, {'counts': {'keys': 7.0}})
    """
    figures: dict[str, Any] = dict.fromkeys(_TOTALS.values(), 0.0)
    stores: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name in _TOTALS:
                figures[_TOTALS[sample.name]] += sample.value
            elif sample.name in _PER_STORE and "store" in sample.labels:
                per = stores.setdefault(sample.labels["store"], {})
                key = _PER_STORE[sample.name]
                per[key] = per.get(key, 0.0) + sample.value
    figures["stores"] = stores
    return figures
