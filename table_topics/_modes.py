"""What each table mode does with a batch of records: the one place that knows the modes.

``write_batch(...)`` turns records into rows (``key_value``: the raw key and value;
``value_schema_latest``: the registry's latest value schema) and writes them with the
offsets they cover: appended, or merged by key for a compacted topic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ._records import TopicRecord
from ._rows import key_value_rows, with_partition_column
from ._settings import KEY_VALUE, TableSettings
from ._table_commit import TableCommits


class UnsupportedTableError(Exception):
    """A table this writer cannot keep (yet); said once per writer start, not per batch."""


@dataclass(frozen=True, slots=True)
class BatchWriter:
    """Writes batches of one topic's records to its table, as its settings say."""

    settings: TableSettings
    commits: TableCommits
    registry_url: str | None

    def check(self) -> None:
        """Refuse, before reading a record, a table this writer cannot keep."""
        if self.settings.mode != KEY_VALUE:
            raise UnsupportedTableError(
                f"topic {self.settings.topic}: headrace.table.mode={self.settings.mode}"
                " is not written by this version of the table writer"
            )
        if self.settings.compacted:
            raise UnsupportedTableError(
                f"topic {self.settings.topic}: cleanup.policy=compact (an upsert table)"
                " is not written by this version of the table writer"
            )

    def write(self, records: list[TopicRecord], ends: Mapping[int, int]) -> None:
        """Write ``records`` and record ``ends`` (partition -> next offset) with them."""
        rows = with_partition_column(key_value_rows(records), self.settings.partition_by)
        self.commits.append(rows, ends, merge_schema=False)
