"""A versioned key-value bytes store: every key's values with the time each was valid.

Kafka Streams' versioned store (KIP-889, ``RocksDBVersionedStore``) keeps, per key, a
history of versions: a version written with timestamp ``t`` is valid from ``t`` until
the next version of its key (its ``valid_to``; the latest has none). A delete is a
version too, one with no value (a tombstone). The store follows Kafka Streams' rules:

* the store's observed stream time is the largest timestamp put so far;
* a put (or delete) older than observed stream time minus the history retention is
  dropped (``NOT_PUT``); the retention is also the store's grace period;
* a put older than its key's latest version lands in history: the version before it
  now ends at its timestamp, and it ends where that one ended; a put at a version's
  own timestamp replaces that version;
* ``get(key)`` is the latest value (none after a delete), whatever its age;
* ``get_as_of(key, t)`` is the version valid at ``t``, none if that was a tombstone or
  nothing; for ``t`` older than observed stream time minus the history retention only
  the latest version can answer (it never expires), anything older is gone.

Layout, in three tables of one backend (RocksDB column families, or sorted dicts):

* ``versions``: ``<key length: 4><key><valid_from: 8>`` to ``<valid_to: 8><flag: 1>
  <value>``, every version including the latest, so one reverse seek finds the version
  valid at any time (flag 1: a value, 0: a tombstone);
* ``expiry``: ``<expires at: 8><key length: 4><key><valid_from: 8>``, each version that
  can expire under the time it stops being visible (its ``valid_to``; a latest
  tombstone's own timestamp), so one forward scan finds what the history retention
  has passed. A latest value is not in it: it never expires;
* ``meta``: the observed stream time as of the last flush (a commit), so a reopened
  store drops what it dropped before.

Timestamps are stored big-endian with the sign bit flipped, so byte order is time order.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

from ._backend_store import BackendStore
from ._lifecycle import StoreState
from ._rocksdb import RocksDBBackend
from ._tables import Backend, MemoryBackend, Table, iterate, prefix_end, successor

PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1
"""``put`` made the latest version of its key (Kafka Streams' constant of that name)."""
PUT_RETURN_CODE_NOT_PUT = -(2**63)
"""``put`` was dropped: older than the history retention (Java's ``Long.MIN_VALUE``)."""

NO_END = 2**63 - 1  # the valid_to of a latest version
_FLIP = 2**63
_TIME = struct.Struct(">Q")
_LEN = struct.Struct(">I")
_VALUE, _TOMBSTONE = b"\x01", b"\x00"
_OBSERVED = b"observed-stream-time"
_OPEN = StoreState.OPEN


def _time(ts: int) -> bytes:
    return _TIME.pack(ts + _FLIP)


def _untime(raw: bytes, at: int = 0) -> int:
    return int(_TIME.unpack_from(raw, at)[0]) - _FLIP


class RawVersion(NamedTuple):
    """One version as bytes: ``value`` is ``None`` for a tombstone."""

    value: bytes | None
    valid_from: int
    valid_to: int  # NO_END for the latest


def _expires_at(valid_from: int, valid_to: int, value: bytes | None) -> int | None:
    """When a version stops being visible to any query: its end, or for a latest
    tombstone its own time (what it hides ended then); a latest value never does."""
    if valid_to != NO_END:
        return valid_to
    return None if value is not None else valid_from


class VersionedBytesStore(BackendStore):
    """The versioned store on one backend; see the module docstring for the rules."""

    def __init__(self, name: str, backend: Backend, history_retention: int) -> None:
        if history_retention < 0:
            raise ValueError(f"history retention must be >= 0, got {history_retention}")
        super().__init__(name, backend)
        self.history_retention = history_retention
        self.observed_stream_time = -1
        # Where the last expiry scan ended: nothing can expire below it any more (a new
        # version starts at or after it), and starting there skips the deletes RocksDB
        # still keeps as tombstones. ``None``: scan from the start once.
        self._expired_upto: int | None = None
        self._versions: Table | None = None
        self._expiry: Table | None = None
        self._meta: Table | None = None

    # -- lifecycle ----------------------------------------------------------------------

    def _adopt_tables(self) -> None:
        self._versions = self._backend.table("versions")
        self._expiry = self._backend.table("expiry")
        self._meta = self._backend.table("meta")
        raw = self._meta.get(_OBSERVED)
        self.observed_stream_time = -1 if raw is None else _untime(raw)

    def flush(self) -> None:
        """Write the observed stream time down with the versions (a commit flushes), so
        a reopened store drops what this one would have dropped."""
        self._tables()
        assert self._meta is not None
        self._meta.put(_OBSERVED, _time(self.observed_stream_time))
        super().flush()

    def close(self) -> None:
        if self._lifecycle.state is _OPEN:
            self.flush()
        super().close()

    def _release_tables(self) -> None:
        self._versions = self._expiry = self._meta = None

    def _tables(self) -> tuple[Table, Table]:
        if self._lifecycle.state is not _OPEN:
            self._lifecycle.check_open()
        return self._versions, self._expiry  # type: ignore[return-value]

    # -- reads --------------------------------------------------------------------------

    def get(self, key: bytes) -> RawVersion | None:
        """The latest version of ``key`` if it holds a value (a tombstone: ``None``)."""
        versions, _ = self._tables()
        prefix = _prefix(key)
        found = versions.scan(prefix, prefix_end(prefix), True, 1)
        if not found:
            return None
        version = _decode(found[0], len(prefix))
        return version if version.value is not None else None

    def get_as_of(self, key: bytes, as_of: int) -> RawVersion | None:
        """The version of ``key`` valid at ``as_of``, if it holds a value."""
        if as_of < self.observed_stream_time - self.history_retention:
            latest = self.get(key)
            # The latest version never expires; older ones are gone for such a time.
            return latest if latest is not None and latest.valid_from <= as_of else None
        version = self._version_at(key, as_of)
        return version if version is not None and version.value is not None else None

    def _version_at(self, key: bytes, at: int) -> RawVersion | None:
        versions, _ = self._tables()
        prefix = _prefix(key)
        found = versions.scan(prefix, successor(prefix + _time(at)), True, 1)
        return _decode(found[0], len(prefix)) if found else None

    def _version_after(self, key: bytes, at: int) -> RawVersion | None:
        versions, _ = self._tables()
        prefix = _prefix(key)
        found = versions.scan(successor(prefix + _time(at)), prefix_end(prefix), False, 1)
        return _decode(found[0], len(prefix)) if found else None

    # -- writes -------------------------------------------------------------------------

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        """Write a version (``None``: a tombstone). Returns its ``valid_to``,
        ``PUT_RETURN_CODE_VALID_TO_UNDEFINED`` when it is the latest, or
        ``PUT_RETURN_CODE_NOT_PUT`` when it is older than the history retention."""
        if timestamp < self.observed_stream_time - self.history_retention:
            return PUT_RETURN_CODE_NOT_PUT
        versions, expiry = self._tables()
        if timestamp > self.observed_stream_time:
            self.observed_stream_time = timestamp
        prefix = _prefix(key)
        writes: list[tuple[bytes, bytes | None]] = []
        index: list[tuple[bytes, bytes | None]] = []
        before = self._version_at(key, timestamp)
        if before is not None and before.valid_from == timestamp:
            valid_to = before.valid_to  # the same version, with a new value
            _unindex(index, prefix, before)
        elif before is not None:
            valid_to = before.valid_to
            _unindex(index, prefix, before)
            shortened = RawVersion(before.value, before.valid_from, timestamp)
            writes.append(_encode(prefix, shortened))
            _index(index, prefix, shortened)
        else:
            after = self._version_after(key, timestamp)
            valid_to = NO_END if after is None else after.valid_from
        written = RawVersion(value, timestamp, valid_to)
        writes.append(_encode(prefix, written))
        _index(index, prefix, written)
        versions.write(writes)
        expiry.write(index)
        self._expire()
        return PUT_RETURN_CODE_VALID_TO_UNDEFINED if valid_to == NO_END else valid_to

    def delete(self, key: bytes, timestamp: int) -> RawVersion | None:
        """A tombstone at ``timestamp``; returns the version it replaced at that time
        (``None`` if none, or if the delete is older than the history retention)."""
        if timestamp < self.observed_stream_time - self.history_retention:
            return None
        existing = self.get_as_of(key, timestamp)
        self.put(key, None, timestamp)
        return existing

    def _expire(self) -> None:
        """Drop the versions no query can see any more: those that stopped being valid
        at or before observed stream time minus the history retention."""
        versions, expiry = self._tables()
        bound = self.observed_stream_time - self.history_retention
        start = self._expired_upto
        if start is not None and bound < start:
            return
        gone = list(iterate(expiry, None if start is None else _time(start), _time(bound + 1)))
        self._expired_upto = bound
        if not gone:
            return
        expiry.write([(entry, None) for entry, _ in gone])
        versions.write([(entry[8:], None) for entry, _ in gone])

    # -- restore ------------------------------------------------------------------------

    restores_with_timestamps = True
    """``restore_batch`` takes ``(key, value, timestamp)``: a version's start is its
    changelog record's timestamp."""

    def restore_batch(self, records: Iterable[tuple[bytes, bytes | None, int]]) -> None:
        """Replay changelog records in order, as the puts that logged them: a record that
        was dropped as too old when it was put is dropped again."""
        for key, value, timestamp in records:
            self.put(key, value, timestamp)

    def approximate_num_entries(self) -> int:
        versions, _ = self._tables()
        return versions.approximate_count()


def _prefix(key: bytes) -> bytes:
    return _LEN.pack(len(key)) + key


def _encode(prefix: bytes, version: RawVersion) -> tuple[bytes, bytes]:
    flagged = _TOMBSTONE if version.value is None else _VALUE + version.value
    return prefix + _time(version.valid_from), _time(version.valid_to) + flagged


def _decode(entry: tuple[bytes, bytes], prefix_length: int) -> RawVersion:
    stored_key, raw = entry
    value = raw[9:] if raw[8:9] == _VALUE else None
    return RawVersion(value, _untime(stored_key, prefix_length), _untime(raw))


def _index(index: list[tuple[bytes, bytes | None]], prefix: bytes, version: RawVersion) -> None:
    at = _expires_at(version.valid_from, version.valid_to, version.value)
    if at is not None:
        index.append((_time(at) + prefix + _time(version.valid_from), b""))


def _unindex(index: list[tuple[bytes, bytes | None]], prefix: bytes, version: RawVersion) -> None:
    at = _expires_at(version.valid_from, version.valid_to, version.value)
    if at is not None:
        index.append((_time(at) + prefix + _time(version.valid_from), None))


class InMemoryVersionedStore(VersionedBytesStore):
    """A versioned store in sorted dicts; nothing survives ``close()``."""

    def __init__(self, name: str, history_retention: int) -> None:
        super().__init__(name, MemoryBackend(), history_retention)


class RocksDBVersionedStore(VersionedBytesStore):
    """A versioned store in RocksDB under ``state_dir/rocksdb/<name>``."""

    def __init__(self, name: str, history_retention: int) -> None:
        super().__init__(name, RocksDBBackend(), history_retention)
