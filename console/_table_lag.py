"""How far a table topic's Delta table is behind its topic, read by the console itself.

The table writer may run in the broker's process, a process of its own or not at all;
the console does not ask it. It reads what the table's Delta log says and compares it
with the topic's end offsets:

1. The table at ``<location>/<topic>`` (the writer's layout, ``base.table_layout``, which
   the writer imports too); none yet means every offset of the topic is behind.
2. Each partition's next offset to read, which every table commit records as a Delta
   application transaction ``headrace.table/<topic>/<partition>`` (the layout's
   ``TABLE_APP_ID``); a partition without one is covered from 0.
3. Records behind: the partitions' end offsets minus those. Transaction markers take
   offsets too, so over a transactional topic this is an upper bound, as the writer's
   own ``headrace_table_offsets_behind`` is.
4. The last commit's time (the log's newest entry) and the newest committed record's
   timestamp: the largest ``timestamp`` in the files' statistics, so no data file is read.

deltalake is imported only here, and only when a table location is given.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headrace.base.table_layout import TABLE_APP_ID, offsets_app_id, table_path

TIMESTAMP_STATS = "max.timestamp"


@dataclass(frozen=True, slots=True)
class TableLag:
    """One table topic's table as its Delta log tells it.

    ``last_commit_ms``: when the newest commit was made (None: no table yet);
    ``records_behind``: the topic's end offsets minus the offsets the table covers;
    ``seconds_behind``: now minus the newest committed record's timestamp (None: no
    record committed yet); ``error``: why the table could not be read, if it could not.
    """

    mode: str
    last_commit_ms: int | None
    records_behind: int
    seconds_behind: float | None
    error: str | None = None


def table_lag(
    location: str,
    topic: str,
    mode: str,
    ends: Mapping[int, int],
    *,
    now_s: float | None = None,
    storage_options: dict[str, str] | None = None,
) -> TableLag:
    """The lag of ``topic``'s table under ``location``; ``ends``: partition -> end offset.

    Blocking (it reads the log): call it off the event loop."""
    import deltalake
    from deltalake.exceptions import DeltaError, TableNotFoundError

    everything = sum(ends.values())
    try:
        table = deltalake.DeltaTable(table_path(location, topic), storage_options=storage_options)
    except TableNotFoundError:
        return TableLag(mode, None, everything, None)
    except (DeltaError, OSError) as error:
        return TableLag(mode, None, everything, None, error=str(error))
    covered = {
        partition: table.transaction_version(offsets_app_id(TABLE_APP_ID, topic, partition)) or 0
        for partition in ends
    }
    [last] = table.history(1)
    newest_ms = _newest_timestamp_ms(table)
    now = time.time() if now_s is None else now_s
    return TableLag(
        mode=mode,
        last_commit_ms=int(last["timestamp"]),
        records_behind=sum(max(0, end - covered[p]) for p, end in ends.items()),
        seconds_behind=None if newest_ms is None else max(0.0, now - newest_ms / 1000),
    )


def _newest_timestamp_ms(table: Any) -> int | None:
    """The largest record timestamp in the table's file statistics (epoch ms)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    actions = pa.table(table.get_add_actions(flatten=True))
    if TIMESTAMP_STATS not in actions.column_names or actions.num_rows == 0:
        return None
    newest = pc.max(actions[TIMESTAMP_STATS]).as_py()
    return None if newest is None else int(newest.timestamp() * 1000)
