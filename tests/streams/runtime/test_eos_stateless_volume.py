"""A stateless exactly-once App over a backlog, as reported stopping: filter +
map_values + to on 8 partitions, checked by a read_committed reader.

The App used to stop at the start of such a run with ``Invalid state transition
IN_TRANSACTION -> IN_TRANSACTION``: its first output waited for the output topic's
partition count while an empty commit held and released, and the partition's sender then
began a transaction beside the next ``send`` or the next commit's offsets
(``test_txn_begin_race.py`` forces each interleaving). It needs a large first fetch to
show: 200,000 records of about 300 bytes met it in 7 of 8 runs before the fix (1M
records, as reported, in 4 of 4); ``benchmarks/eos_stateless_volume.py`` runs 1M.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import stateless_eos_job as job
from rtprocs import Cluster

pytestmark = pytest.mark.slow

RECORDS = 200_000
PAD = 250


@pytest.mark.timeout(240)
async def test_a_stateless_exactly_once_app_writes_each_output_exactly_once(
    cluster: Cluster, tmp_path: Path
) -> None:
    source, sink = "eos-volume-in", "eos-volume-out"
    await job.create_topics(cluster.bootstrap, source, sink)
    await asyncio.to_thread(job.produce, cluster.bootstrap, source, RECORDS, PAD)
    run = await job.run_app(
        cluster.bootstrap, tmp_path / "state", "eos-volume", source, sink, RECORDS, wait=150
    )
    assert run.failure is None, f"the App failed: {run.failure!r}"
    values = await job.read_output(cluster.bootstrap, sink)
    problems = job.problems(values, RECORDS)
    assert not problems, problems
    assert len(values) == len(job.expected_ids(RECORDS))
