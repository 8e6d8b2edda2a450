"""Interactive queries and health over HTTP for one running :class:`~streams.App`.

``GET /stores/{store}/{key}``, step by step:

1. find the store (``404`` when the topology has none of that name) and its kind
   (``_store_reads.py``); check the query parameters that kind takes: none for a
   key-value store, ``from``, ``to`` and ``limit`` for a window or session store
   (``_query_params.py``); a wrong one is a ``400``;
2. serialize the key with the store's key serde (a URL key is text; a bytes store gets
   its UTF-8 bytes); a key the serde refuses is a ``400``;
3. a global store is held whole by every instance: answer from the local copy once the
   global stores are bootstrapped (``503`` before, while they are still partial);
4. otherwise find the sub-topology that owns the store and pick the partition with
   Kafka's default partitioner over its partition count, which names the task; answer
   from the local store when this instance runs that task, else ``404`` naming the
   instance the last assignment gave it to (``host``), so the caller can ask that one.

The answer holds ``value`` for a key-value store (``404`` when the key has none), and
``windows`` or ``sessions`` (a list of ``{start, end, value}``, ``200`` even when
empty) for a window or session store, with ``truncated`` saying whether ``limit`` cut
the list.

``GET /stores/{store}?from_key=&to_key=&limit=`` (window and session stores also take
``from`` and ``to``) reads a range of keys, both bounds inclusive and optional. A range
spans every partition, so no one instance holds it unless the store is global: the
answer holds the ``entries`` of the tasks this instance runs (by key, then time; at
most ``limit``, ``truncated`` when cut), lists those tasks under ``tasks``, and names
under ``unanswered`` every other task of the store with the instance holding it
(``null`` when no owner is known yet). A client asks each named instance for the rest,
as a Kafka Streams client asks every ``StreamsMetadata`` of a store.

``GET /stores`` lists every store of the topology, global ones included.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ._global import GlobalState
from ._http import Params, Response, Route, json_response
from ._murmur2 import partition_for_key
from ._query_params import BadQuery, QueryError, check_names, parse_limit, parse_time_bounds
from ._store_reads import StoreKind, jsonable, key_range, key_windows, merge, store_kind

if TYPE_CHECKING:
    from .._nodes import Subtopology
    from .._topology import Topology
    from ._app import App

_WINDOWED_PARAMS = ("from", "to", "limit")
_RANGE_PARAMS = ("from_key", "to_key", "limit")


class NotFound(QueryError):
    status = 404


class Unavailable(QueryError):
    status = 503


class StoreQueries:
    """Answers for ``app``, which runs ``topology`` (known before the rest of start-up,
    so ``/topology`` answers while the instance starts)."""

    def __init__(self, app: App, topology: Topology) -> None:
        self._app = app
        self._topology = topology

    def routes(self) -> dict[str, Route]:
        return {
            "health": self.health,
            "metrics": self.metrics,
            "stores": self.stores,
            "topology": self.topology,
        }

    async def health(self, _segments: list[str], _params: Params) -> Response:
        status = self._app.status()
        healthy = status["state"] in ("running", "rebalancing")
        return json_response(200 if healthy else 503, status)

    async def metrics(self, _segments: list[str], _params: Params) -> Response:
        return 200, "text/plain; version=0.0.4; charset=utf-8", self._app.metrics.exposition()

    async def topology(self, segments: list[str], params: Params) -> Response:
        """The running topology's ``describe()``, as data (sub-topologies of nodes with
        their neighbours, topics and stores) and as Kafka Streams' text."""
        if segments or params:
            return json_response(400, {"error": "/topology takes no path or parameters"})
        description = self._topology.describe()
        return json_response(200, {**dataclasses.asdict(description), "text": str(description)})

    async def stores(self, segments: list[str], params: Params) -> Response:
        """Route ``/stores[/{store}[/{key}]]``; every refusal is a :class:`QueryError`,
        answered with its status and message, so a bad request never becomes a ``500``."""
        try:
            if not segments:
                check_names(params, (), "/stores")
                return json_response(200, {"stores": self._listing()})
            if len(segments) == 1:
                return self._range(segments[0], params)
            if len(segments) == 2:
                return self._key_query(segments[0], segments[1], params)
            raise BadQuery("use /stores, /stores/{store} or /stores/{store}/{key}")
        except QueryError as error:
            return json_response(error.status, {**error.context, "error": str(error)})

    # -- one key ------------------------------------------------------------------------

    def _key_query(self, store_name: str, key: str, params: Params) -> Response:
        where = {"store": store_name, "key": key}
        sub, kind = self._locate(store_name, where)
        windowed = kind is not StoreKind.KEY_VALUE
        try:
            check_names(
                params,
                _WINDOWED_PARAMS if windowed else (),
                f"a key of {kind.value} store {store_name!r}",
            )
            bounds = parse_time_bounds(params) if windowed else None
            limit = parse_limit(params)
        except BadQuery as error:
            raise BadQuery(str(error), **where) from None
        typed_key, key_bytes = self._key(store_name, key, where)
        if sub is None:
            store = self._global_store(store_name, where)
            return self._lookup(store, store_name, key, typed_key, {"global": True})
        task_id = self._task_for(sub, key_bytes)
        task = self._app.tasks.tasks.get(task_id)
        if task is None or not task.running:
            host = self._app.assignor.view.hosts.get(task_id)
            why = "the key is held by another instance" if host else "no owner known"
            raise NotFound(why, **where, task=task_id, host=host)
        store = task.executor.stores[store_name]
        if bounds is None:
            return self._lookup(store, store_name, key, typed_key, {"task": task_id})
        items, truncated = key_windows(store, kind, typed_key, bounds, limit)
        listing = "windows" if kind is StoreKind.WINDOW else "sessions"
        return json_response(
            200,
            {
                **where,
                "kind": kind.value,
                "task": task_id,
                "host": self._app.host,
                listing: items,
                "limit": limit,
                "truncated": truncated,
            },
        )

    def _lookup(
        self, store: Any, name: str, key: str, typed_key: Any, where: dict[str, Any]
    ) -> Response:
        """Answer from a key-value store of this instance: ``200`` with the value,
        ``404`` without."""
        getter = getattr(store, "get", None)
        if getter is None:
            raise BadQuery(f"store {name!r} has no point lookups", store=name, key=key)
        value = getter(typed_key)
        body = {
            "store": name,
            "key": key,
            **where,
            "host": self._app.host,
            "value": jsonable(value),
        }
        return json_response(200 if value is not None else 404, body)

    # -- a range of keys ----------------------------------------------------------------

    def _range(self, store_name: str, params: Params) -> Response:
        where: dict[str, Any] = {"store": store_name}
        sub, kind = self._locate(store_name, where)
        windowed = kind is not StoreKind.KEY_VALUE
        try:
            check_names(
                params,
                _RANGE_PARAMS + (_WINDOWED_PARAMS if windowed else ()),
                f"a range of {kind.value} store {store_name!r}",
            )
            bounds = parse_time_bounds(params) if windowed else None
            limit = parse_limit(params)
        except BadQuery as error:
            raise BadQuery(str(error), **where) from None
        key_from, from_bytes = self._bound(store_name, params, "from_key", where)
        key_to, to_bytes = self._bound(store_name, params, "to_key", where)
        if from_bytes is not None and to_bytes is not None and from_bytes > to_bytes:
            raise BadQuery("'from_key' sorts after 'to_key' in the store's key order", **where)
        if sub is None:
            store = self._global_store(store_name, where)
            entries, truncated = merge(
                [key_range(store, kind, key_from, key_to, bounds, limit)], limit
            )
            return json_response(
                200,
                {
                    **where,
                    "kind": kind.value,
                    "global": True,
                    "host": self._app.host,
                    "entries": entries,
                    "limit": limit,
                    "truncated": truncated,
                },
            )
        answered: list[str] = []
        unanswered: dict[str, str | None] = {}
        parts = []
        tasks = self._app.tasks.tasks
        for task_id in self._tasks_of(sub):
            task = tasks.get(task_id)
            if task is not None and task.running:
                store = task.executor.stores[store_name]
                parts.append(key_range(store, kind, key_from, key_to, bounds, limit))
                answered.append(task_id)
            else:
                unanswered[task_id] = self._app.assignor.view.hosts.get(task_id)
        entries, truncated = merge(parts, limit)
        return json_response(
            200,
            {
                **where,
                "kind": kind.value,
                "host": self._app.host,
                "entries": entries,
                "limit": limit,
                "truncated": truncated,
                "tasks": answered,
                "unanswered": unanswered,
            },
        )

    def _bound(
        self, store_name: str, params: Params, name: str, where: dict[str, Any]
    ) -> tuple[Any, bytes | None]:
        raw = params.get(name)
        if raw is None:
            return None, None
        return self._key(store_name, raw, {**where, name: raw})

    # -- where a store and its keys live ------------------------------------------------

    def _locate(
        self, store_name: str, where: dict[str, Any]
    ) -> tuple[Subtopology | None, StoreKind]:
        """The sub-topology holding ``store_name`` (``None``: a global store), and the
        store's kind; :class:`NotFound` when the topology has no such store."""
        topology = self._topology
        if store_name in topology.global_stores:
            sub = None
        else:
            sub = next((s for s in topology.subtopologies() if store_name in s.stores), None)
            if sub is None:
                raise NotFound(f"no store {store_name!r}")
            if self._app.state.value in ("created", "starting"):
                # The tasks and the group's assignment exist once start-up is done.
                raise Unavailable("the instance is starting", **where)
        return sub, store_kind(topology.store_builder(store_name))

    def _partitions(self, sub: Subtopology) -> int:
        sources = self._app.sources_of(sub.id)
        return self._app.partition_count(sources[0]) if sources else 1

    def _task_for(self, sub: Subtopology, key_bytes: bytes) -> str:
        return f"{sub.id}_{partition_for_key(key_bytes, self._partitions(sub))}"

    def _tasks_of(self, sub: Subtopology) -> list[str]:
        return [f"{sub.id}_{p}" for p in range(self._partitions(sub))]

    def _listing(self) -> list[dict[str, Any]]:
        topology = self._topology
        stores: list[dict[str, Any]] = [
            {"store": name, "global": False, "subtopology": sub.id}
            for sub in topology.subtopologies()
            for name in sub.stores
        ]
        stores += [{"store": name, "global": True} for name in topology.global_stores]
        return sorted(stores, key=lambda entry: str(entry["store"]))

    def _key(self, store_name: str, key: str, where: dict[str, Any]) -> tuple[Any, bytes]:
        """The key as the typed store takes it, and its serialized bytes; a key the
        store's key serde refuses is a ``400``."""
        serde = getattr(self._topology.store_builder(store_name), "key_serde", None)
        if getattr(serde, "source_side", False):
            # The store keeps keys as a source without a key serde gave them: its bytes,
            # or the App's default key serde's objects. Those bytes, not the store's own
            # encoding of them, chose the key's partition.
            serde = self._app.default_key_serde
        if serde is None:
            return key.encode(), key.encode()
        try:
            data = serde.serialize(
                f"{self._app.settings.application_id}-{store_name}-changelog", key
            )
        except Exception as error:  # any serde error: the caller sent a key it cannot take
            raise BadQuery(f"the store's key serde refused the key: {error}", **where) from None
        if isinstance(data, str):  # a serde that passes objects through: keys are bytes
            return key.encode(), key.encode()
        if not isinstance(data, bytes):
            raise BadQuery(
                f"the store's key serde refused the key: it serialized to {data!r}, not bytes",
                **where,
            )
        return key, data

    def _global_store(self, store_name: str, where: dict[str, Any]) -> Any:
        # The App holds them once start-up is done (this server listens before): None until then.
        globals_ = self._app.global_stores
        state = GlobalState.CREATED if globals_ is None else globals_.state
        if globals_ is None or state is not GlobalState.RUNNING:
            raise Unavailable(
                f"the global stores are {state.value}, not running", **where, **{"global": True}
            )
        return globals_.stores[store_name]
