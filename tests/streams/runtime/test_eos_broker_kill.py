"""Exactly-once through a broker SIGKILL: the payments job recovers on its own and the
balances a read_committed reader finds are still exact."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from brokerproc import BrokerProcess
from payments_job import Job
from rtprocs import Instance

pytestmark = pytest.mark.slow


@pytest.mark.timeout(240)
async def test_broker_killed_mid_job_and_restarted_leaves_balances_exact(
    instances: list[Instance], tmp_path: Path
) -> None:
    broker = BrokerProcess(tmp_path / "data", "--fsync", "never").start()
    try:
        job = Job(
            broker.bootstrap,
            tmp_path,
            "broker",
            "exactly_once_v2",
            count=60_000,
            per_second=3_000,
            kills=0,
        )
        job.instances = instances

        async def kill_broker() -> None:
            await asyncio.sleep(8)
            await asyncio.to_thread(broker.kill)  # SIGKILL, mid-transaction
            await asyncio.sleep(1.5)
            await asyncio.to_thread(broker.start)  # same port, same data

        killer = asyncio.create_task(kill_broker())
        balances, want = await job.run(gaps=(0, 0), wait=150)
        await killer
        problems = balances.problems(want)
        assert not problems, (
            f"{len(problems)} accounts wrong, e.g. {problems[:5]}\n{job.logs()[-4000:]}"
        )
        assert balances.records == 60_000
        assert job.stop() == [0, 0]
    finally:
        broker.kill()
