"""Interactive queries and health over HTTP for one running :class:`~streams.App`.

``GET /stores/{store}/{key}``, step by step: find the sub-topology that owns the store;
serialize the key with the store's key serde (a URL key is text; a bytes store gets its
UTF-8 bytes); pick the partition with Kafka's default partitioner over the
sub-topology's partition count, which names the task; answer from the local store when
this instance runs that task, else name the instance the last assignment gave it to.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ._http import Response, Route, json_response
from ._murmur2 import partition_for_key

if TYPE_CHECKING:
    from ._app import App


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        try:
            return json.loads(value)
        except ValueError:
            try:
                return value.decode()
            except UnicodeDecodeError:
                return value.hex()
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump()
    return value


class StoreQueries:
    def __init__(self, app: App) -> None:
        self._app = app

    def routes(self) -> dict[str, Route]:
        return {"health": self.health, "metrics": self.metrics, "stores": self.stores}

    async def health(self, _segments: list[str]) -> Response:
        status = self._app.status()
        healthy = status["state"] in ("running", "rebalancing")
        return json_response(200 if healthy else 503, status)

    async def metrics(self, _segments: list[str]) -> Response:
        return 200, "text/plain; version=0.0.4; charset=utf-8", self._app.metrics.exposition()

    async def stores(self, segments: list[str]) -> Response:
        if len(segments) != 2:
            return json_response(400, {"error": "use /stores/{store}/{key}"})
        store_name, key = segments
        app = self._app
        topology = app.topology
        sub = next((s for s in topology.subtopologies() if store_name in s.stores), None)
        if sub is None:
            return json_response(404, {"error": f"no store {store_name!r}"})
        builder = topology.store_builder(store_name)
        serde = getattr(builder, "key_serde", None)
        typed_key: Any = key
        key_bytes = key.encode()
        if serde is not None and type(serde).__name__ == "BytesSerde":
            typed_key = key_bytes
        elif serde is not None:
            key_bytes = serde.serialize(f"{app.settings.application_id}-{store_name}-changelog", key)
        sources = app._layout.sources.get(sub.id, ())
        partitions = app.partition_count(sources[0]) if sources else 1
        task_id = f"{sub.id}_{partition_for_key(key_bytes, partitions)}"
        task = app.tasks.tasks.get(task_id)
        if task is not None and task.running:
            store = task.executor.stores[store_name]
            getter = getattr(store, "get", None)
            if getter is None:
                return json_response(400, {"error": f"store {store_name!r} has no point lookups"})
            value = getter(typed_key)
            body = {"store": store_name, "key": key, "task": task_id, "host": app.host,
                    "value": _jsonable(value)}
            return json_response(200 if value is not None else 404, body)
        host = app.assignor.view.hosts.get(task_id)
        return json_response(
            404, {"store": store_name, "key": key, "task": task_id, "host": host,
                  "error": "the key is held by another instance" if host else "no owner known"}
        )
