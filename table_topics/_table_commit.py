"""A topic's table is its own checkpoint: rows and the offsets they cover in one commit.

Each commit records, as Delta application transactions, the next offset to read of
every partition it moves: ``headrace.table.<topic id>/<topic>/<partition>`` (the layout
of ``base.table_layout``: the export job's scheme under an app id per topic id). A writer that
starts reads them and resumes there, so a crash before a commit loses nothing (the
records are read again) and a crash after it writes nothing twice (they are not).

Why the topic id: a topic deleted and created again under its name starts again at
offset 0, and offsets recorded for the old topic would make the writer skip the new
one's records. Under the new id nothing is recorded, so its table resumes from the
topic's beginning; the old topic's rows stay in the table.

Each commit also records the same ends under ``headrace.table/<topic>/<partition>``
(``TABLE_APP_ID``): what the table covers of the topic that has the name now, for readers
that know a topic by its name only (the console's table lag). The writer never resumes
from those. A cluster that gives no topic ids has only these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headrace.base.table_layout import TABLE_APP_ID
from headrace.spark_bridge._delta import DeltaSink, offsets_commit
from headrace.spark_bridge._offsets import TopicPartition


class TableCommits:
    """The Delta table at ``path`` of one topic: what it covers, and appends to it.

    ``app_id``: what the offsets are recorded under (``base.table_layout``'s
    ``incarnation_app_id``)."""

    def __init__(
        self,
        path: str,
        topic: str,
        *,
        app_id: str = TABLE_APP_ID,
        partition_by: list[str] | None,
        storage_options: dict[str, str] | None,
    ) -> None:
        self.path, self.topic, self.app_id = path, topic, app_id
        self._partition_by = partition_by
        self._storage_options = storage_options
        self._sink = DeltaSink(path, app_id=app_id, storage_options=storage_options)

    def committed_offsets(self, partitions: int) -> dict[int, int]:
        """Next offset to read per partition, for those the table has a record of."""
        tps = [TopicPartition(self.topic, p) for p in range(partitions)]
        return {tp.partition: end for tp, end in self._sink.committed_offsets(tps).items()}

    def append(self, rows: Any, ends: Mapping[int, int], *, merge_schema: bool) -> None:
        """Append ``rows`` and record ``ends`` (partition -> next offset) in one commit.

        ``merge_schema``: a row set with columns the table lacks adds them (a compatible
        new value schema); otherwise such rows are refused."""
        import deltalake

        commit = offsets_commit(
            {TopicPartition(self.topic, p): end for p, end in ends.items()},
            [self.app_id, TABLE_APP_ID],  # one, without topic ids
        )
        deltalake.write_deltalake(
            self.path,
            rows,
            mode="append",
            partition_by=self._partition_by,
            schema_mode="merge" if merge_schema else None,
            storage_options=self._storage_options,
            commit_properties=commit,
        )
