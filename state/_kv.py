"""Key-value bytes stores on a backend table: in memory and RocksDB."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ._backend_store import BackendStore
from ._lifecycle import StoreState
from ._protocols import ChangeRecord, FlushListener
from ._rocksdb import RocksDBBackend
from ._tables import Backend, MemoryBackend, Table, iterate, prefix_end, successor

_OPEN = StoreState.OPEN


class _TableKeyValueStore(BackendStore):
    """A ``KeyValueBytesStore`` on the default table of one backend."""

    def __init__(self, name: str, backend: Backend) -> None:
        super().__init__(name, backend)
        self._table: Table | None = None

    def _adopt_tables(self) -> None:
        self._table = self._backend.table("default")

    def _release_tables(self) -> None:
        self._table = None

    def _t(self) -> Table:
        if self._lifecycle.state is not _OPEN:
            self._lifecycle.check_open()
        return self._table  # type: ignore[return-value]

    def get(self, key: bytes) -> bytes | None:
        return self._t().get(key)

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        return self._t().get_many(keys)

    def put(self, key: bytes, value: bytes | None) -> None:
        if value is None:
            self._t().delete(key)
        else:
            self._t().put(key, value)

    def put_if_absent(self, key: bytes, value: bytes) -> bytes | None:
        table = self._t()
        existing = table.get(key)
        if existing is None:
            table.put(key, value)
        return existing

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        self._t().write(entries)

    def delete(self, key: bytes) -> bytes | None:
        table = self._t()
        existing = table.get(key)
        if existing is not None:
            table.delete(key)
        return existing

    def range(self, key_from: bytes | None, key_to: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        hi = None if key_to is None else successor(key_to)
        return iterate(self._t(), key_from, hi)

    def reverse_range(
        self, key_from: bytes | None, key_to: bytes | None
    ) -> Iterator[tuple[bytes, bytes]]:
        hi = None if key_to is None else successor(key_to)
        return iterate(self._t(), key_from, hi, reverse=True)

    def prefix_scan(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        return iterate(self._t(), prefix, prefix_end(prefix))

    def all(self) -> Iterator[tuple[bytes, bytes]]:
        return iterate(self._t(), None, None)

    def reverse_all(self) -> Iterator[tuple[bytes, bytes]]:
        return iterate(self._t(), None, None, reverse=True)

    def approximate_num_entries(self) -> int:
        return self._t().approximate_count()

    def restore_batch(self, records: Iterable[ChangeRecord]) -> None:
        self._t().restore(records)

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool = False) -> bool:
        return False


class InMemoryKeyValueStore(_TableKeyValueStore):
    """A key-value store kept in a sorted dict; nothing survives ``close()``."""

    def __init__(self, name: str) -> None:
        super().__init__(name, MemoryBackend())


class RocksDBKeyValueStore(_TableKeyValueStore):
    """A key-value store in RocksDB under ``state_dir/rocksdb/<name>``."""

    def __init__(self, name: str) -> None:
        super().__init__(name, RocksDBBackend())
