"""Exactly-once recovery: the instance's transactional id, and rewinding after an abort.

The transactional id is ``<application id>-<instance id>``. The instance id is the
``instance_id`` setting, or a random name written once into the state directory
(``<state_dir>/<application id>/instance.id``): an instance restarted on the same state
directory takes over its predecessor's transactional id, and InitProducerId aborts the
transaction the predecessor left open instead of waiting for its timeout.

Rewinding (:meth:`Rewinder.rewind`), step by step, after a transaction was aborted:

1. if the producer was fenced, replace it with a new one (InitProducerId bumps the
   epoch); a second fence within :data:`FENCE_WINDOW_S` means another live instance
   holds the id, and this one stops instead (no ping-pong of fencing);
2. close every task without a checkpoint: its stores may hold aborted writes;
3. reopen the tasks of the consumer's assignment: each installs its snapshot and
   restores the committed changelog tail from there (``_tasks.py``);
4. seek their input partitions back to the group's committed offsets.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from headrace.base import write_atomically

from ._client import ClientFactory, GroupConsumer, TransactionalProducer
from ._commit import Committer
from ._errors import ClientError, FencedError, TransactionError
from ._restore import Restorer
from ._settings import AppSettings
from ._tasks import TaskManager

log = logging.getLogger("headrace.streams.runtime.rewind")

FENCE_WINDOW_S = 60.0
INSTANCE_FILE = "instance.id"


def instance_id(settings: AppSettings) -> str:
    """The stable name of this instance (module docstring)."""
    if settings.instance_id:
        return settings.instance_id
    directory = Path(settings.state_dir) / settings.application_id
    path = directory / INSTANCE_FILE
    try:
        found = path.read_text().strip()
    except FileNotFoundError:
        found = ""
    if found:
        return found
    directory.mkdir(parents=True, exist_ok=True)
    name = uuid.uuid4().hex[:12]
    write_atomically(path, f"{name}\n".encode("ascii"))
    return name


def transactional_id(settings: AppSettings) -> str:
    return f"{settings.application_id}-{instance_id(settings)}"


class Rewinder:
    def __init__(
        self,
        clients: ClientFactory,
        settings: AppSettings,
        committer: Committer,
        consumer: GroupConsumer,
        tasks: TaskManager,
        restorer: Restorer,
        stopping: Callable[[], bool],
    ) -> None:
        self._clients = clients
        self._settings = settings
        self._committer = committer
        self._consumer = consumer
        self._tasks = tasks
        self._restorer = restorer
        self._stopping = stopping
        self._last_fence = -FENCE_WINDOW_S
        self.rewinds = 0

    async def rewind(self, error: TransactionError | FencedError) -> None:
        """Steps 1-4 of the module docstring; raises ``FencedError`` when this
        instance must stop."""
        self.rewinds += 1
        await self.renew_producer(error)
        log.warning("transaction aborted (%s); rewinding tasks to the committed offsets", error)
        self.close_all()
        await self.reopen()

    async def renew_producer(self, error: TransactionError | FencedError) -> None:
        """Step 1 alone (a rebalance reopens the tasks itself)."""
        if isinstance(error, FencedError):
            now = time.monotonic()
            if now - self._last_fence < FENCE_WINDOW_S:
                raise FencedError(
                    f"fenced twice within {FENCE_WINDOW_S:.0f} s; another "
                    f"instance uses this transactional id: {error}"
                ) from error
            self._last_fence = now
        if isinstance(error, FencedError) or self._committer.broken:
            await self._new_producer()

    def close_all(self) -> None:
        """Step 2: close every task; none of them is clean, so none is checkpointed."""
        tasks = list(self._tasks.tasks.values())
        for task in tasks:
            task.dirty = True
            if not task.running:
                self._restorer.drop(task)
            try:
                task.close()
            except Exception as failure:
                log.error("closing task %s failed: %s", task.id, failure)
        self._tasks.forget(tasks)

    async def reopen(self) -> None:
        """Steps 3 and 4 for the consumer's current assignment."""
        assigned = self._consumer.assignment()
        opened = self._tasks.open(assigned)
        sources = [tp for task in opened for tp in task.sources]
        for task in opened:
            self._consumer.pause(task.sources)
        while True:
            try:
                await self._consumer.seek_to_committed(sources)
                break
            except ClientError as failure:
                if not failure.retriable or self._stopping():
                    raise
                log.warning("rewinding input failed (%s); retrying", failure)
                await asyncio.sleep(0.5)
        for task in opened:
            if await self._restorer.add(task):
                self._consumer.resume(task.sources)

    async def _new_producer(self) -> None:
        """Step 1: a new producer for the same transactional id, retried until the
        broker answers (it may be restarting)."""
        old = self._committer.producer
        try:
            await old.stop()
        except Exception as failure:
            log.warning("stopping the fenced producer failed: %s", failure)
        while True:
            producer: TransactionalProducer = self._clients.transactional_producer(
                transactional_id(self._settings)
            )
            try:
                await producer.start()
            except (ClientError, TransactionError) as failure:
                if self._stopping():
                    raise
                log.warning("starting a new transactional producer failed (%s); retrying", failure)
                await asyncio.sleep(1.0)
                continue
            self._committer.replace_producer(producer)
            return
