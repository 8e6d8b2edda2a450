"""What an instance does when its group rebalances: the consumer's two callbacks.

Revocation (:meth:`Rebalance.revoked`) comes first: every running task commits before
the group reassigns anything, so whoever gets a partition next starts where this
instance stopped. Tasks that stay with this instance keep running; the others close
only when the new assignment arrives (:meth:`Rebalance.assigned`), step by step:

1. let a commit still finishing settle: it covers tasks that may close now;
2. close the tasks whose partitions moved away (a task still restoring drops out of
   the restorer first);
3. take over this instance's standbys of tasks now assigned to it, their stores
   already caught up;
4. open the new tasks (stores only), their partitions paused until their stores are
   restored and their processors started (``RuntimeTask.restored``);
5. close the standbys no longer wanted and open the new ones;
6. count the tasks by state for the metrics.

Both callbacks hold the App's lock, so they never interleave with a round of the
processing loop. Moving the App between RUNNING and REBALANCING is the App's own
business (``_app.py``); this module only does the work.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from ._client import TopicPartition
from ._errors import ClientError, FencedError, SourceTopicDeletedError, TransactionError
from ._metrics import AppMetrics
from ._standby import StandbyTask
from ._startup import Runtime
from ._tasks import RuntimeTask

log = logging.getLogger("headrace.streams.runtime.app")

CommitTasks = Callable[[list[RuntimeTask]], Awaitable[None]]
"""Commits the given tasks, as at a close (the processing loop's ``commit``)."""


class Rebalance:
    """The rebalance callbacks of one run of an App over ``rt``.

    ``commit`` commits tasks as at a close; ``failure`` tells whether the instance has
    already failed (then nothing more is committed); ``fail`` stops the instance with
    an error it cannot get past.
    """

    def __init__(
        self,
        rt: Runtime,
        metrics: AppMetrics,
        lock: asyncio.Lock,
        commit: CommitTasks,
        failure: Callable[[], BaseException | None],
        fail: Callable[[BaseException], None],
    ) -> None:
        self._rt = rt
        self._metrics = metrics
        self._lock = lock
        self._commit = commit
        self._failure = failure
        self._fail = fail

    async def revoked(self, revoked: set[TopicPartition]) -> None:
        """Commit every running task before the group reassigns anything; tasks that
        stay with this instance keep running, the others close when the new assignment
        arrives."""
        rt = self._rt
        async with self._lock:
            if self._failure() is not None:
                return
            try:
                await self._commit(rt.tasks.running())
            except (TransactionError, FencedError) as error:
                # Aborted: every task rewinds; the new assignment reopens them from
                # their snapshots at the committed offsets.
                log.warning("commit on revocation aborted: %s", error)
                self._metrics.transactions_aborted.inc()
                rt.rewinder.close_all()
                try:
                    await rt.rewinder.renew_producer(error)
                except FencedError as fatal:
                    # Fenced again: another instance holds our id; stop, do not fight it.
                    self._fail(fatal)
            except SourceTopicDeletedError:
                pass  # fatal, and sticky: the loop's next poll raises it and reports it once
            except ClientError as error:
                log.warning("commit on revocation failed: %s", error)

    async def assigned(self, assigned: set[TopicPartition]) -> None:
        """Take the new assignment (the steps of the module docstring)."""
        rt = self._rt
        self._metrics.rebalances.inc()
        tasks, restorer, consumer = rt.tasks, rt.restorer, rt.consumer
        async with self._lock:
            await rt.committer.settle(keep_error=True)
            gone = [t for t in tasks.tasks.values() if not set(t.sources) <= assigned]
            for task in gone:
                if not task.running:
                    restorer.drop(task)
                task.close()
            tasks.forget(gone)
            promoted = await self._take_standbys(assigned)
            for task in tasks.open(assigned, promoted):
                consumer.pause(task.sources)
                if await restorer.add(task):
                    consumer.resume(task.sources)
            await self._assign_standbys()
            count_tasks(rt, self._metrics)
        log.info(
            "assignment: tasks %s%s",
            sorted(tasks.tasks),
            f", standbys {sorted(rt.standbys.tasks)}" if rt.standbys else "",
        )

    async def _take_standbys(self, assigned: set[TopicPartition]) -> dict[str, StandbyTask]:
        """The standbys of tasks now assigned to this instance, no longer updated."""
        rt = self._rt
        if rt.standbys is None:
            return {}
        ids = {rt.tasks.task_of(tp) for tp in assigned} - set(rt.tasks.tasks)
        taken = [await rt.standbys.remove(t) for t in sorted(i for i in ids if i)]
        return {t.id: t for t in taken if t is not None}

    async def _assign_standbys(self) -> None:
        rt = self._rt
        standbys = rt.standbys
        if standbys is None:
            return
        wanted = set(rt.assignor.view.standby) - set(rt.tasks.tasks)
        for task_id in sorted(set(standbys.tasks) - wanted):
            standby = await standbys.remove(task_id)
            if standby is not None:
                standby.close()
        for task_id in sorted(wanted - set(standbys.tasks)):
            await standbys.add(rt.tasks.open_standby(task_id))


def count_tasks(rt: Runtime, metrics: AppMetrics) -> None:
    """Set the tasks gauge: how many of this instance's tasks restore, run, stand by."""
    states: dict[str, int] = {"restoring": 0, "running": 0, "standby": 0}
    for task in rt.tasks.tasks.values():
        states[task.state.value] = states.get(task.state.value, 0) + 1
    if rt.standbys is not None:
        states["standby"] = len(rt.standbys.tasks)
    for name, n in states.items():
        metrics.tasks.labels(name).set(n)
