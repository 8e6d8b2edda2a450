"""What each table mode does with a batch of records: the one place that knows the modes.

``batch_writer(...)`` chooses by the topic's settings; ``BatchWriter.write(fetched,
ends)`` then, in order:

1. Rows: ``key_value`` makes the raw key and value columns (``_rows``);
   ``value_schema_latest`` the columns of the registry's latest value schema
   (``_schema_rows``), and the records that do not fit become dead letters.
2. Dead letters, if any, are appended to ``<location>/_dead_letters/<topic>``, exactly
   once by offsets under an app id of their own (``_dead_letters``). They go first: a
   crash before step 3 replays the batch, and the dead-letter table drops what it holds.
3. The rows go to the topic's table with the offsets the batch covers, in one commit:
   appended (a new schema version's columns merged into the table's), or, for a
   compacted topic, merged by key so the table holds the latest value per key and a
   tombstone deletes its row (``_upsert``).

``headrace.table.partition.by`` applies to appended tables; an upsert table is not
partitioned (its MERGE rewrites the files a key lives in, wherever that is).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from headrace.base.table_layout import TABLE_APP_ID, incarnation_app_id

from ._dead_letters import DEFAULT_APP_ID, DeadLetterTable
from ._fetched import Fetched
from ._rows import with_partition_column
from ._schema_rows import DeadLetter, ValueSchemaRows, tombstones
from ._settings import KEY_VALUE, VALUE_SCHEMA_LATEST, TableSettings
from ._table_commit import TableCommits
from ._upsert import upsert

log = logging.getLogger("headrace.table_topics")
Rows = Callable[[Fetched], tuple[Any, list[DeadLetter]]]


class UnsupportedTableError(Exception):
    """A table this writer cannot keep; said once per writer start, not per batch."""


def batch_writer(
    settings: TableSettings,
    commits: TableCommits,
    *,
    location: str,
    registry_url: str | None,
    storage_options: dict[str, str] | None,
) -> BatchWriter:
    """The writer of ``settings.topic``'s batches; ``UnsupportedTableError`` for a table
    it cannot keep, before a record is read."""
    mode, topic = settings.mode, settings.topic
    dead_letters = None
    if mode == KEY_VALUE:
        rows: Rows = _key_value_rows
    elif mode == VALUE_SCHEMA_LATEST:
        if not registry_url:
            raise UnsupportedTableError(
                f"topic {topic}: headrace.table.mode={mode} needs a schema registry: run the"
                " broker with --schema-registry-listen, or give --table-schema-registry-url"
                " (headrace.table.schema.registry.url)"
            )
        rows = partial(_schema_rows, ValueSchemaRows(registry_url, topic))
        dead_letters = DeadLetterTable(
            location,
            topic,
            app_id=incarnation_app_id(DEFAULT_APP_ID, settings.topic_id),
            storage_options=storage_options,
        )
    else:  # the broker refuses other values; another cluster might not
        raise UnsupportedTableError(f"topic {topic}: unknown headrace.table.mode={mode}")
    if settings.compacted and settings.partition_by:
        log.warning(
            "topic %s: a compacted topic's table is an upsert table, not partitioned;"
            " headrace.table.partition.by=%s is not applied",
            topic,
            settings.partition_by,
        )
    return BatchWriter(settings, commits, rows, dead_letters, storage_options)


def _key_value_rows(fetched: Fetched) -> tuple[Any, list[DeadLetter]]:
    return fetched.key_value_rows(), []


def _schema_rows(rows: ValueSchemaRows, fetched: Fetched) -> tuple[Any, list[DeadLetter]]:
    return rows.rows(fetched.records())


class BatchWriter:
    """Writes batches of one topic's records to its table, as its settings say (made by
    :func:`batch_writer`)."""

    def __init__(
        self,
        settings: TableSettings,
        commits: TableCommits,
        rows: Rows,
        dead_letters: DeadLetterTable | None,
        storage_options: dict[str, str] | None,
    ) -> None:
        self.settings, self.commits = settings, commits
        self._rows, self._dead_letters = rows, dead_letters
        self._storage_options = storage_options

    def write(self, fetched: Fetched, ends: Mapping[int, int]) -> None:
        """Write ``fetched`` and record ``ends`` (partition -> next offset) with it."""
        rows, dead = self._rows(fetched)
        if dead and self._dead_letters is not None:
            self._dead_letters.append(dead, ends)
        if self.settings.compacted:
            upsert(
                self.commits.path,
                rows,
                ends,
                app_id=self.commits.app_id,
                also_app_id=TABLE_APP_ID,
                storage_options=self._storage_options,
                topic=self.settings.topic,
                tombstones=tombstones(fetched.records(), dead),
            )
            return
        self.commits.append(
            with_partition_column(rows, self.settings.partition_by),
            ends,
            merge_schema=self.settings.mode == VALUE_SCHEMA_LATEST,
        )
