"""Snapshots of a task's RocksDB stores, each with the changelog offsets it holds.

Under exactly-once the live store directory (``<task>/rocksdb``) is written ahead of
the transaction that logs the writes, so after a crash it may hold writes that were
aborted. A snapshot is taken only at a moment when the stores hold exactly what the
committed changelogs hold (right after a commit, before anything new is processed,
see ``_commit.py``), so it is a state the changelog agrees with up to the offsets
written next to it.

Layout, inside the task directory::

    snapshot/            the newest complete snapshot
        <store>/         the store's ``checkpoint()`` (RocksDB: SST files hard-linked)
        .checkpoint      the changelog offsets the snapshot reflects
    snapshot.tmp/        a snapshot being taken; never trusted

Taking one, step by step: build it in ``snapshot.tmp`` (a RocksDB checkpoint per store,
then the offsets file, fsynced); move the old ``snapshot`` aside; rename ``snapshot.tmp``
to ``snapshot``; delete the old one. A crash at any point leaves either the old or the
new snapshot complete under ``snapshot`` (or, between the two renames, only under
``snapshot.old``, which :meth:`TaskSnapshots.offsets` also accepts).

Installing one copies it into ``<task>/rocksdb`` (SST files hard-linked: RocksDB never
changes a file it has written, it only adds and deletes), so the snapshot survives a
crash during the restore that follows.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeGuard

from headrace.base import fsync_dir
from headrace.state import (
    CheckpointableStore,
    CheckpointError,
    StateStoreError,
    StoreIOError,
    TaskCheckpoint,
)

from ._client import TopicPartition

log = logging.getLogger("headrace.streams.runtime.snapshots")

SNAPSHOT, SNAPSHOT_TMP, SNAPSHOT_OLD = "snapshot", "snapshot.tmp", "snapshot.old"
LIVE = "rocksdb"


def checkpointable(store: object) -> TypeGuard[CheckpointableStore]:
    """Whether ``store`` can write a checkpoint (a store from elsewhere may not say)."""
    return isinstance(store, CheckpointableStore) and store.supports_checkpoint


class TaskSnapshots:
    def __init__(self, task_dir: Path) -> None:
        self.task_dir = task_dir

    def supported(self, stores: Mapping[str, Any], logged: Iterable[str]) -> bool:
        """Whether every logged store is one a snapshot can capture (RocksDB)."""
        return all(checkpointable(stores[name]) for name in logged if name in stores)

    def take(self, stores: Mapping[str, Any], offsets: Mapping[TopicPartition, int]) -> None:
        """Snapshot ``stores`` (already flushed) as reflecting ``offsets``."""
        root = self.task_dir
        tmp, final, old = root / SNAPSHOT_TMP, root / SNAPSHOT, root / SNAPSHOT_OLD
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            for name, store in stores.items():
                if checkpointable(store):
                    store.checkpoint(tmp / name)
            TaskCheckpoint(tmp).write_checkpoint(offsets)
            if final.exists():
                shutil.rmtree(old, ignore_errors=True)
                os.replace(final, old)
            os.replace(tmp, final)
            fsync_dir(root)
            shutil.rmtree(old, ignore_errors=True)
        except (OSError, StateStoreError, ValueError) as error:
            raise StoreIOError(f"cannot snapshot the stores of {root}: {error}") from error

    def _complete(self) -> Path | None:
        for name in (SNAPSHOT, SNAPSHOT_OLD):
            path = self.task_dir / name
            if (path / ".checkpoint").is_file():
                return path
        return None

    def offsets(self) -> dict[TopicPartition, int]:
        """The offsets of the newest complete snapshot; empty when there is none."""
        path = self._complete()
        if path is None:
            return {}
        try:
            return TaskCheckpoint(path).read_checkpoint()
        except (CheckpointError, StoreIOError) as error:
            log.warning("unusable snapshot %s (%s)", path, error)
            return {}

    def install(self) -> dict[TopicPartition, int]:
        """Replace the live stores with the newest snapshot; return its offsets (empty,
        and the live stores wiped, when there is no usable snapshot)."""
        live = self.task_dir / LIVE
        shutil.rmtree(live, ignore_errors=True)
        offsets = self.offsets()
        path = self._complete()
        if not offsets or path is None:
            return {}
        try:
            live.mkdir(parents=True)
            for store in path.iterdir():
                if store.is_dir():
                    _link_copy(store, live / store.name)
        except OSError as error:
            shutil.rmtree(live, ignore_errors=True)
            log.warning(
                "cannot install snapshot %s (%s); rebuilding from the changelog", path, error
            )
            return {}
        return offsets

    def discard(self) -> None:
        for name in (SNAPSHOT, SNAPSHOT_TMP, SNAPSHOT_OLD):
            shutil.rmtree(self.task_dir / name, ignore_errors=True)


def _link_copy(source: Path, target: Path) -> None:
    target.mkdir(parents=True)
    for item in source.iterdir():
        if item.suffix == ".sst":
            os.link(item, target / item.name)
        else:
            shutil.copy2(item, target / item.name)
