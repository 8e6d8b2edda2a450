"""Exactly-once appends to a Delta Lake table (delta-rs), keyed by source offsets or batch ids.

A Delta commit can carry application transactions: ``(app_id, version)`` pairs that
the table remembers atomically with the data. Two ways of using them:

* by offsets: one app id per topic-partition, ``{app_id}/{topic}/{partition}``, whose
  version is the next offset to read. Rows at or past the recorded offset are new;
  rows below it were committed before and are dropped. A rerun, a retried micro-batch
  or a restart from a lost checkpoint therefore writes nothing twice, and a reader can
  resume from what the table recorded.
* by batch id: one app id for a streaming query's ``foreachBatch``; a batch whose id
  is not above the recorded version was committed and is skipped. For frames that no
  longer carry offsets (aggregates, joins).

One writer per app id: two processes appending for the same app id at once can both
commit (delta-rs does not check app transactions for blind appends).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from headrace.base.table_layout import offsets_app_id

from ._deps import require
from ._errors import DeltaError
from ._offsets import TopicPartition


def offsets_commit(ends: Mapping[TopicPartition, int], app_ids: Iterable[str]) -> Any:
    """The ``CommitProperties`` of a commit that covers ``ends`` (next offset per partition).

    One application transaction per app id (the first of a repeated one) and partition,
    app id by app id and each in partition order, and the same ends as the commit's
    ``headrace.offsets`` metadata, ``{"<topic>/<partition>": end}`` in JSON, for a reader
    of the table's history. Every writer of offsets commits this, so tables written by the
    export and by the table writer read alike (their stored form is pinned by tests).
    """
    deltalake = require("deltalake")
    moving = sorted(ends.items())
    return deltalake.CommitProperties(
        custom_metadata={
            "headrace.offsets": json.dumps({f"{tp.topic}/{tp.partition}": e for tp, e in moving})
        },
        app_transactions=[
            deltalake.Transaction(
                app_id=offsets_app_id(app_id, tp.topic, tp.partition), version=end
            )
            for app_id in dict.fromkeys(app_ids)
            for tp, end in moving
        ],
    )


class DeltaSink:
    """Appends to the Delta table at ``path``; see the module docstring for the two modes."""

    def __init__(
        self,
        path: str,
        *,
        app_id: str = "headrace",
        partition_by: list[str] | None = None,
        storage_options: dict[str, str] | None = None,
    ) -> None:
        self.path = str(path)
        self.app_id = app_id
        self.partition_by = partition_by
        self.storage_options = storage_options

    # ------------------------------------------------------------------ reading state
    def table(self) -> Any | None:
        """The current snapshot, or None before the first commit."""
        deltalake = require("deltalake")
        try:
            return deltalake.DeltaTable(self.path, storage_options=self.storage_options)
        except deltalake.exceptions.TableNotFoundError:
            return None

    def committed_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Next offset to read per partition, for those the table has a record of."""
        table = self.table()
        if table is None:
            return {}
        found = {
            tp: table.transaction_version(offsets_app_id(self.app_id, tp.topic, tp.partition))
            for tp in tps
        }
        return {tp: v for tp, v in found.items() if v is not None}

    def committed_batch(self) -> int | None:
        """The last ``foreachBatch`` id committed under this app id."""
        table = self.table()
        return None if table is None else table.transaction_version(self.app_id)

    # ------------------------------------------------------------------ writing
    def append_records(self, data: Any, ends: Mapping[TopicPartition, int] | None = None) -> int:
        """Append rows that carry ``topic``, ``partition`` and ``offset``; returns rows written.

        In order: read the recorded offsets of the partitions present; drop rows below
        them; compute each partition's new version (``ends`` if given, else the highest
        offset + 1); commit the rest with those versions in one Delta commit. When no
        partition moves forward, nothing is committed.
        """
        pa = require("pyarrow")
        pc = require("pyarrow.compute")
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        ends = dict(ends or {})
        if table.num_rows:
            keys = table.group_by(["topic", "partition"]).aggregate([("offset", "max")])
            for topic, partition, top in zip(
                keys["topic"].to_pylist(),
                keys["partition"].to_pylist(),
                keys["offset_max"].to_pylist(),
                strict=True,
            ):
                tp = TopicPartition(topic, partition)
                ends[tp] = max(ends.get(tp, 0), top + 1)
        recorded = self.committed_offsets(ends)
        moving = {tp: end for tp, end in ends.items() if end > recorded.get(tp, -1)}
        if not moving:
            return 0
        if recorded and table.num_rows:
            keep = None
            for tp, floor in recorded.items():
                stale = pc.and_(
                    pc.and_(
                        pc.equal(table["topic"], tp.topic),
                        pc.equal(table["partition"], tp.partition),
                    ),
                    pc.less(table["offset"], floor),
                )
                keep = stale if keep is None else pc.or_(keep, stale)
            if keep is not None:
                table = table.filter(pc.invert(keep))
        self._commit(table, offsets_commit(moving, [self.app_id]))
        return int(table.num_rows)

    def append_batch(self, data: Any, batch_id: int) -> bool:
        """Append ``data`` as streaming batch ``batch_id`` unless that id was committed."""
        done = self.committed_batch()
        if done is not None and batch_id <= done:
            return False
        deltalake = require("deltalake")
        commit = deltalake.CommitProperties(
            custom_metadata={"headrace.batch": batch_id},
            app_transactions=[deltalake.Transaction(app_id=self.app_id, version=batch_id)],
        )
        self._commit(data, commit)
        return True

    def foreach_batch(self, by_offsets: bool = False) -> Callable[[Any, int], None]:
        """A function for ``writeStream.foreachBatch``.

        ``by_offsets=True`` needs the source's topic, partition and offset columns and
        deduplicates by them (robust even to a lost checkpoint); otherwise the batch id
        is the key, which suits any frame.
        """

        def write(frame: Any, batch_id: int) -> None:
            data = frame.toArrow()
            if by_offsets:
                self.append_records(data)
            elif data.num_rows:
                self.append_batch(data, batch_id)

        return write

    def _commit(self, data: Any, commit: Any) -> None:
        deltalake = require("deltalake")
        try:
            deltalake.write_deltalake(
                self.path,
                data,
                mode="append",
                partition_by=self.partition_by,
                storage_options=self.storage_options,
                commit_properties=commit,
            )
        except deltalake.exceptions.CommitFailedError as exc:
            raise DeltaError(f"commit to {self.path} lost a race: {exc}", retriable=True) from exc
        except deltalake.exceptions.DeltaError as exc:
            raise DeltaError(f"cannot write {self.path}: {exc}") from exc
