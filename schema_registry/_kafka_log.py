"""The ``_schemas`` topic as the registry's log, through aiokafka (any Kafka cluster).

Reading: one consumer, assigned the topic's single partition with no group, reads it
from the beginning on start and then follows it, applying each record to the
:class:`RegistryState` (``read_committed``, so an aborted write never shows).

Writing, ``write(build)``, one writer at a time:

1. take this process's write lock
2. make sure this process holds the writer's transactional id: starting a producer
   with it (InitProducerId) fences whichever registry process held it before, and
   aborts anything that one left open; from then on only we can write
3. catch up: read up to the topic's last stable offset, so the state holds every
   record any earlier writer committed
4. ``build()`` checks the request against that state and returns records and answer;
   a record larger than ``MAX_RECORD_BYTES`` is refused as an invalid schema here,
   before anything is sent (Kafka would refuse it, and the retries would all fail)
5. append the records in one transaction and commit
6. wait until the reader has applied them, then answer (read-your-writes)

A producer that finds itself fenced at step 5 (another process wrote meanwhile) is
dropped, and the steps run again from 2: its state was stale, the new build sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, TopicAlreadyExistsError

from ._errors import InvalidSchema, StoreError
from ._state import RegistryState

T = TypeVar("T")
Record = tuple[bytes, bytes | None]
log = logging.getLogger(__name__)

TOPIC = "_schemas"
WRITE_ATTEMPTS = 5
# The largest record the registry writes: under Kafka's default message.max.bytes
# (1 MiB and 12 bytes for a batch), with room for the batch and record headers.
MAX_RECORD_BYTES = 1_000_000
TIMEOUT_S = 30.0
FETCH_WAIT_MS = 50
_TOPIC_ALREADY_EXISTS = 36


class KafkaSchemaLog:
    def __init__(
        self,
        bootstrap_servers: str,
        *,
        topic: str = TOPIC,
        writer_id: str = "headrace-schema-registry",
        replication_factor: int = 1,
        client_options: dict[str, Any] | None = None,
    ) -> None:
        self.state = RegistryState()
        self._bootstrap = bootstrap_servers
        self._topic = topic
        self._tp = TopicPartition(topic, 0)
        self._writer_id = f"{writer_id}-{topic}"
        self._replication = replication_factor
        self._options = dict(client_options or {})
        self._consumer: AIOKafkaConsumer | None = None
        self._producer: AIOKafkaProducer | None = None
        self._tail: asyncio.Task[None] | None = None
        self._position = 0
        self._moved = asyncio.Condition()
        self._write_lock = asyncio.Lock()

    async def start(self) -> None:
        await self._create_topic()
        # A short fetch wait: a write waits for the reader to pass its commit marker,
        # which an idle long poll would hold back by the whole wait.
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self._bootstrap,
            enable_auto_commit=False,
            isolation_level="read_committed",
            fetch_max_wait_ms=FETCH_WAIT_MS,
            **self._options,
        )
        await consumer.start()
        self._consumer = consumer
        consumer.assign([self._tp])
        await consumer.seek_to_beginning(self._tp)
        self._tail = asyncio.create_task(self._follow(), name="schemas-log-reader")
        await self.catch_up()

    async def stop(self) -> None:
        if self._tail is not None:
            self._tail.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._tail
        await self._drop_producer()
        if self._consumer is not None:
            await self._consumer.stop()

    async def __aenter__(self) -> KafkaSchemaLog:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _create_topic(self) -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=self._bootstrap, **self._options)
        await admin.start()
        try:
            topic = NewTopic(
                self._topic, 1, self._replication, topic_configs={"cleanup.policy": "compact"}
            )
            response = await admin.create_topics([topic])
            for name, code, *_ in response.topic_errors:
                if code not in (0, _TOPIC_ALREADY_EXISTS):
                    raise StoreError(f"cannot create topic {name}: error code {code}")
        except TopicAlreadyExistsError:
            pass
        finally:
            await admin.close()

    async def _follow(self) -> None:
        assert self._consumer is not None
        consumer = self._consumer
        while True:
            try:
                batches = await consumer.getmany(self._tp, timeout_ms=FETCH_WAIT_MS)
                for record in batches.get(self._tp, ()):
                    self.state.apply(record.key, record.value)
                position = await consumer.position(self._tp)
            except KafkaError as exc:  # the broker went away: keep trying, reads serve memory
                log.warning("reading %s failed, retrying: %s", self._topic, exc)
                await asyncio.sleep(1.0)
                continue
            if position != self._position:
                async with self._moved:
                    self._position = position
                    self._moved.notify_all()

    async def catch_up(self) -> None:
        """Return once every record committed before this call is applied."""
        assert self._consumer is not None
        try:
            ends = await asyncio.wait_for(self._consumer.end_offsets([self._tp]), TIMEOUT_S)
        except (KafkaError, TimeoutError) as exc:
            raise StoreError(f"cannot read the end of {self._topic}: {exc}") from exc
        await self._wait_for(ends[self._tp])

    async def _wait_for(self, offset: int) -> None:
        async with self._moved:
            try:
                await asyncio.wait_for(
                    self._moved.wait_for(lambda: self._position >= offset), TIMEOUT_S
                )
            except TimeoutError as exc:
                raise StoreError(
                    f"{self._topic} was not read up to offset {offset} in {TIMEOUT_S}s"
                ) from exc

    async def write(self, build: Callable[[], tuple[list[Record], T]]) -> T:
        async with self._write_lock:
            for _attempt in range(WRITE_ATTEMPTS):
                producer = await self._writer()
                await self.catch_up()
                records, answer = build()
                if not records:
                    return answer
                _check_sizes(records)
                try:
                    async with producer.transaction():
                        sent = [
                            await producer.send(self._topic, value, key=key)
                            for key, value in records
                        ]
                        last = await sent[-1]
                except KafkaError as exc:  # fenced by another registry process, or worse
                    log.info(
                        "write to %s failed (%s); taking the writer's role again", self._topic, exc
                    )
                    await self._drop_producer()
                    continue
                await self._wait_for(last.offset + 1)
                return answer
        raise StoreError(f"could not write to {self._topic} after {WRITE_ATTEMPTS} attempts")

    async def _writer(self) -> AIOKafkaProducer:
        if self._producer is None:
            producer = AIOKafkaProducer(
                bootstrap_servers=self._bootstrap,
                transactional_id=self._writer_id,
                enable_idempotence=True,
                acks="all",
                **self._options,
            )
            try:
                await producer.start()
            except KafkaError as exc:
                with contextlib.suppress(Exception):
                    await producer.stop()
                raise StoreError(f"cannot start the {self._topic} writer: {exc}") from exc
            self._producer = producer
        return self._producer

    async def _drop_producer(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            with contextlib.suppress(Exception):
                await producer.stop()


def _check_sizes(records: list[Record]) -> None:
    for key, value in records:
        size = len(key) + len(value or b"")
        if size > MAX_RECORD_BYTES:
            raise InvalidSchema(
                f"the schema takes {size} bytes as stored; the registry stores at most "
                f"{MAX_RECORD_BYTES} (one Kafka record)"
            )
