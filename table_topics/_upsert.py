"""A compacted topic's table: the latest value per key, merged exactly once by offsets.

``upsert(path, rows, ends, app_id=...)`` takes a batch of rows (with the record columns
``key``, ``partition`` and ``offset``, and any others: the value's columns) and ``ends``,
the next offset per partition that the batch covers. In order:

1. Read the versions of the application transactions ``{app_id}/{topic}/{partition}``:
   the next offset each partition's last commit covered.
2. Drop the rows below them (a replayed batch), and rows without a key (a compacted
   topic refuses those; there is nothing to merge them on).
3. A partition moves when its end (``ends``, or its last row's offset + 1) is past the
   recorded one. When none moves, stop: a replay changes nothing, not even the log.
4. Keep the row of the highest offset per key; the topic's order decides.
5. Commit, recording the moving partitions' ends in the same commit as the data:
   with no table yet, create it from the rows that are not tombstones; otherwise MERGE
   on ``key``: matched and a tombstone -> delete, matched -> update every column,
   not matched and not a tombstone -> insert. New columns (a compatible new schema
   version) are merged into the table's schema; the table's columns the rows lack are
   set null on update, so an updated row holds nothing of the value it replaced.
6. A MERGE that changes no row makes no commit in delta-rs (a tombstone for a key the
   table never had): then an empty append records the ends, so the batch is not
   replayed into a later, different state.

delta-rs 1.x takes ``CommitProperties(app_transactions=...)`` for ``merge`` as for
``write_deltalake``, and both land in the one commit: a crash before it leaves the
table and its offsets as they were, a crash after it leaves both moved.

A tombstone is a row whose ``tombstones`` entry is true; without that mask, a row whose
``value`` column is null, or (rows with no ``value`` column: a schema's fields) a row
whose value columns are all null. Pass the mask where a value can have every field
null, as an Avro record of optional fields can.

One writer per app id and table: a MERGE conflicts with a concurrent one and fails
(``DeltaError``, retriable), but two writers could still interleave their batches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from headrace.base.table_layout import offsets_app_id
from headrace.spark_bridge._delta import offsets_commit
from headrace.spark_bridge._errors import DeltaError
from headrace.spark_bridge._offsets import TopicPartition

from ._rows import HOUR_COLUMN, record_schema

# Columns of the record and the derived partition column, not of its value: never a
# tombstone's evidence.
RECORD_COLUMNS = frozenset([*record_schema(with_value=False).names, HOUR_COLUMN])
# The merge source's flag; never written to the table.
TOMBSTONE = "headrace_tombstone"


def upsert(
    path: str,
    rows: pa.Table,
    ends: Mapping[int, int],
    *,
    app_id: str,
    storage_options: dict[str, str] | None = None,
    topic: str | None = None,
    tombstones: Sequence[bool] | pa.Array | None = None,
    also_app_id: str | None = None,
) -> None:
    """Merge ``rows`` into the table at ``path``; see the module docstring for the steps.

    ``topic`` names the application transactions; by default the table's folder name,
    as the tables of topics live at ``<location>/<topic>`` (``base.table_layout``).
    ``also_app_id``: the ends are recorded under it too, for readers only (the layout's
    by-name ``TABLE_APP_ID``).
    """
    import deltalake

    path = str(path)
    topic = topic if topic is not None else path.rstrip("/").rsplit("/", 1)[-1]
    flags = _tombstones(rows, tombstones)
    rows = rows.append_column(TOMBSTONE, flags)
    table = _table(path, storage_options)

    def txn(partition: int) -> str:
        return offsets_app_id(app_id, topic, partition)

    # 1-3: what the table recorded, what this batch adds to it.
    partitions = set(ends) | set(rows["partition"].to_pylist())
    recorded: dict[int, int] = {}
    if table is not None:
        for partition in partitions:
            version = table.transaction_version(txn(partition))
            if version is not None:
                recorded[partition] = version
    tops: dict[int, int] = dict(ends)
    for partition, offset in zip(
        rows["partition"].to_pylist(), rows["offset"].to_pylist(), strict=True
    ):
        tops[partition] = max(tops.get(partition, 0), offset + 1)
    rows = _unseen(rows, recorded)
    moving = {p: end for p, end in tops.items() if end > recorded.get(p, -1)}
    if not moving:
        return
    # 4: the latest row per key.
    rows = _latest_per_key(rows)
    commit = offsets_commit(
        {TopicPartition(topic, p): end for p, end in moving.items()},
        [app_id] if also_app_id is None else [app_id, also_app_id],
    )
    try:
        if table is None:
            live = rows.filter(pc.invert(rows[TOMBSTONE])).drop_columns([TOMBSTONE])
            deltalake.write_deltalake(
                path, live, mode="append", storage_options=storage_options, commit_properties=commit
            )
            return
        # 5: the table's columns that the rows lack are set null by the update.
        target = pa.schema(table.schema().to_arrow())
        for field in target:
            if field.name not in rows.column_names:
                rows = rows.append_column(field.name, pa.nulls(rows.num_rows, field.type))
        (
            table.merge(
                rows,
                "t.key = s.key",
                source_alias="s",
                target_alias="t",
                merge_schema=True,
                commit_properties=commit,
            )
            .when_matched_delete(predicate=f"s.{TOMBSTONE}")
            .when_matched_update_all(except_cols=[TOMBSTONE])
            .when_not_matched_insert_all(predicate=f"NOT s.{TOMBSTONE}", except_cols=[TOMBSTONE])
            .execute()
        )
        # 6: a MERGE that changed nothing committed nothing; record the ends alone.
        after = _table(path, storage_options) or table
        first, end = min(moving.items())
        if after.transaction_version(txn(first)) != end:
            deltalake.write_deltalake(
                path,
                pa.schema(after.schema().to_arrow()).empty_table(),
                mode="append",
                storage_options=storage_options,
                commit_properties=commit,
            )
    except deltalake.exceptions.CommitFailedError as exc:
        raise DeltaError(f"upsert into {path} lost a race: {exc}", retriable=True) from exc
    except deltalake.exceptions.DeltaError as exc:
        raise DeltaError(f"cannot upsert into {path}: {exc}") from exc


def _table(path: str, storage_options: dict[str, str] | None) -> Any | None:
    import deltalake

    try:
        return deltalake.DeltaTable(path, storage_options=storage_options)
    except deltalake.exceptions.TableNotFoundError:
        return None


def _tombstones(rows: pa.Table, given: Sequence[bool] | pa.Array | None) -> pa.Array:
    if given is not None:
        flags = pa.array(given, pa.bool_())
        if len(flags) != rows.num_rows:
            raise ValueError(f"{len(flags)} tombstone flags for {rows.num_rows} rows")
        return flags.fill_null(False)
    if "value" in rows.column_names:
        return pc.is_null(rows["value"]).combine_chunks()
    values = [name for name in rows.column_names if name not in RECORD_COLUMNS]
    flags = pa.array([True] * rows.num_rows, pa.bool_())
    for name in values:
        flags = pc.and_(flags, pc.is_null(rows[name]).combine_chunks())
    return flags


def _unseen(rows: pa.Table, recorded: Mapping[int, int]) -> pa.Table:
    """The rows with a key and at or past their partition's recorded offset."""
    keep = pc.is_valid(rows["key"])
    for partition, floor in recorded.items():
        stale = pc.and_(pc.equal(rows["partition"], partition), pc.less(rows["offset"], floor))
        keep = pc.and_(keep, pc.invert(stale))
    return rows.filter(keep)


def _latest_per_key(rows: pa.Table) -> pa.Table:
    best: dict[bytes, int] = {}
    offsets = rows["offset"].to_pylist()
    for i, key in enumerate(rows["key"].to_pylist()):
        if key not in best or offsets[i] >= offsets[best[key]]:
            best[key] = i
    return rows.take(pa.array(sorted(best.values()), pa.int64()))
