"""Interactive queries and health over HTTP for one running :class:`~streams.App`.

``GET /stores/{store}/{key}``, step by step:

1. serialize the key with the store's key serde (a URL key is text; a bytes store gets
   its UTF-8 bytes); a key the serde refuses is a ``400``;
2. a global store is held whole by every instance: answer from the local copy once the
   global stores are bootstrapped (``503`` before, while they are still partial);
3. otherwise find the sub-topology that owns the store and pick the partition with
   Kafka's default partitioner over its partition count, which names the task; answer
   from the local store when this instance runs that task, else name the instance the
   last assignment gave it to.

``GET /stores`` lists every store of the topology, global ones included.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ._global import GlobalState
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
        if not segments:
            return json_response(200, {"stores": self._listing()})
        if len(segments) != 2:
            return json_response(400, {"error": "use /stores or /stores/{store}/{key}"})
        store_name, key = segments
        topology = self._app.topology
        is_global = store_name in topology.global_stores
        sub = None if is_global else next(
            (s for s in topology.subtopologies() if store_name in s.stores), None
        )
        if not is_global and sub is None:
            return json_response(404, {"error": f"no store {store_name!r}"})
        try:
            typed_key, key_bytes = self._key(store_name, key)
        except Exception as error:  # any serde error: the caller sent a key it cannot take
            error_text = f"the store's key serde refused the key: {error}"
            return json_response(400, {"store": store_name, "key": key, "error": error_text})
        if sub is None:
            return self._global_lookup(store_name, key, typed_key)
        app = self._app
        sources = app.sources_of(sub.id)
        partitions = app.partition_count(sources[0]) if sources else 1
        task_id = f"{sub.id}_{partition_for_key(key_bytes, partitions)}"
        task = app.tasks.tasks.get(task_id)
        if task is not None and task.running:
            store = task.executor.stores[store_name]
            return self._lookup(store, store_name, key, typed_key, {"task": task_id})
        host = app.assignor.view.hosts.get(task_id)
        return json_response(
            404, {"store": store_name, "key": key, "task": task_id, "host": host,
                  "error": "the key is held by another instance" if host else "no owner known"}
        )

    def _listing(self) -> list[dict[str, Any]]:
        topology = self._app.topology
        stores: list[dict[str, Any]] = [
            {"store": name, "global": False, "subtopology": sub.id}
            for sub in topology.subtopologies()
            for name in sub.stores
        ]
        stores += [{"store": name, "global": True} for name in topology.global_stores]
        return sorted(stores, key=lambda entry: str(entry["store"]))

    def _key(self, store_name: str, key: str) -> tuple[Any, bytes]:
        """The key as the typed store takes it, and its serialized bytes."""
        serde = getattr(self._app.topology.store_builder(store_name), "key_serde", None)
        if serde is None:
            return key, key.encode()
        data = serde.serialize(f"{self._app.settings.application_id}-{store_name}-changelog", key)
        if isinstance(data, str):  # a serde that passes objects through: keys are bytes
            return key.encode(), key.encode()
        if not isinstance(data, bytes):
            raise ValueError(f"it serialized to {data!r}, not bytes")
        return key, data

    def _global_lookup(self, store_name: str, key: str, typed_key: Any) -> Response:
        # Created by App.start() after this server is listening; None until then.
        globals_ = self._app.global_stores
        state = GlobalState.CREATED if globals_ is None else globals_.state
        if globals_ is None or state is not GlobalState.RUNNING:
            return json_response(
                503, {"store": store_name, "key": key, "global": True,
                      "error": f"the global stores are {state.value}, not running"}
            )
        store = globals_.stores[store_name]
        return self._lookup(store, store_name, key, typed_key, {"global": True})

    def _lookup(
        self, store: Any, name: str, key: str, typed_key: Any, where: dict[str, Any]
    ) -> Response:
        """Answer from a store of this instance: ``200`` with the value, ``404`` without."""
        getter = getattr(store, "get", None)
        if getter is None:
            return json_response(400, {"error": f"store {name!r} has no point lookups"})
        value = getter(typed_key)
        body = {"store": name, "key": key, **where, "host": self._app.host,
                "value": _jsonable(value)}
        return json_response(200 if value is not None else 404, body)
