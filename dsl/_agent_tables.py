"""Faust-style tables: a changelogged key-value store per task, used like a dict.

A :class:`Table` is declared once (``app.table("counts", default=int)``) and used inside
agents and timers; each access goes to the store of the task the code runs for
(``_agent_runner.CURRENT_STORES``), the partition of the record being handled. The
store is RocksDB, logged to ``<application id>-<name>-changelog``, so it is restored
after a crash or a move like every other store, and under exactly-once its writes
commit in the transaction of the records that made them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from headrace.state import Stores

from ._agent_runner import CURRENT_STORES
from ._errors import TopologyBuildError
from ._serdes import Serdes


class Table:
    """A dict-like view of one store: ``table[key]`` (``default()`` when missing, as
    faust's tables), ``table[key] = value``, ``del table[key]``, ``key in table``,
    ``get``, ``items``."""

    def __init__(
        self,
        name: str,
        default: Callable[[], Any] | None = None,
        key_serde: Any = None,
        value_serde: Any = None,
        persistent: bool = True,
    ) -> None:
        self.name = name
        self.default = default
        self.key_serde = key_serde if key_serde is not None else Serdes.auto()
        self.value_serde = value_serde if value_serde is not None else Serdes.auto()
        self.persistent = persistent

    def store_builder(self) -> Any:
        return (
            Stores.key_value_store(self.name, persistent=self.persistent)
            .with_key_serde(self.key_serde)
            .with_value_serde(self.value_serde)
        )

    def _store(self) -> Any:
        stores = CURRENT_STORES.get(None)
        if stores is None or self.name not in stores:
            raise TopologyBuildError(
                f"table {self.name!r} is used outside an agent or timer of its app"
            )
        return stores[self.name]

    def __getitem__(self, key: Any) -> Any:
        value = self._store().get(key)
        if value is not None:
            return value
        if self.default is None:
            raise KeyError(key)
        return self.default()

    def __setitem__(self, key: Any, value: Any) -> None:
        self._store().put(key, value)

    def __delitem__(self, key: Any) -> None:
        self._store().delete(key)

    def __contains__(self, key: Any) -> bool:
        return self._store().get(key) is not None

    def get(self, key: Any, default: Any = None) -> Any:
        value = self._store().get(key)
        return default if value is None else value

    def items(self) -> Iterator[tuple[Any, Any]]:
        """The entries of the current task's partition."""
        return iter(list(self._store().all()))
