"""What every store on a ``Backend`` shares: its name, lifecycle and backend."""

from __future__ import annotations

from pathlib import Path

from ._errors import CheckpointUnsupportedError
from ._lifecycle import StoreLifecycle, StoreState
from ._protocols import StateStoreContext
from ._tables import Backend


class BackendStore:
    """Opens, flushes and closes one backend under the store's lifecycle.

    ``init`` works in this order:

    1. move the lifecycle to OPEN (which refuses a store that is already open);
    2. open the backend at ``state_dir/"rocksdb"/<name>``;
    3. ``_adopt_tables()``: the subclass takes the tables it works on;
    4. on any failure in 2 or 3, move to CLOSED and re-raise.

    ``close`` calls ``_release_tables()`` before closing the backend, so no table
    handle outlives it.
    """

    def __init__(self, name: str, backend: Backend) -> None:
        self._name = name
        self._backend = backend
        self._lifecycle = StoreLifecycle(name)

    @property
    def name(self) -> str:
        return self._name

    @property
    def persistent(self) -> bool:
        return self._backend.persistent

    def _adopt_tables(self) -> None:
        raise NotImplementedError

    def _release_tables(self) -> None:
        raise NotImplementedError

    def init(self, context: StateStoreContext) -> None:
        self._lifecycle.move(StoreState.OPEN)
        try:
            self._backend.open(context.state_dir / "rocksdb", self._name)
            self._adopt_tables()
        except BaseException:
            self._lifecycle.move(StoreState.CLOSED)
            raise

    def flush(self) -> None:
        self._lifecycle.check_open()
        self._backend.flush()

    @property
    def supports_checkpoint(self) -> bool:
        return self._backend.checkpointable

    def checkpoint(self, dest: Path) -> None:
        if not self._backend.checkpointable:
            raise CheckpointUnsupportedError(
                f"store {self._name!r} is kept in memory and cannot be checkpointed;"
                " only a persistent (RocksDB) store can"
            )
        self._lifecycle.check_open()
        self._backend.checkpoint(Path(dest))

    def close(self) -> None:
        if self._lifecycle.state is StoreState.OPEN:
            self._release_tables()
            self._backend.close()
        self._lifecycle.move(StoreState.CLOSED)
