"""The producers behind the sink: librdkafka through confluent-kafka.

``RecordProducer`` is what a batch write's task uses: idempotent (``enable.idempotence``,
so a retried send is never stored twice), ``acks=all``, keyed records placed by murmur2
as the Java client places them (Spark's sink is a Java producer, so a key lands in the
partition it would land in there). Every record is awaited before the task ends; the
first failed delivery fails the task, naming the partition and Kafka's reason.

``MarkedTransaction`` is what a streaming write's task uses: the same producer with a
``transactional.id``, whose transaction carries, besides the records, an offset commit
to a consumer group of its own that says which micro-batch it wrote
(``sendOffsetsToTransaction``). The records and that marker become visible together or
not at all, so a task can ask the group, after fencing every earlier producer of its
id, whether its batch is already in the topic.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from typing import Any

from ._client_log import ClientLog
from ._deps import require
from ._errors import BrokerRequestError
from ._sink_options import SinkOptions
from ._sink_records import Records

_NO_OFFSET = -1001  # librdkafka's OFFSET_INVALID: nothing committed
_REQUEST_TIMEOUT = 60.0  # init, offsets and commit of a transaction, each
# A fresh librdkafka client drops its bootstrap connection as soon as the metadata names
# the broker, and holds back its connection to that broker for half its
# reconnect.backoff.ms ("still suppressed for 48ms" in its debug log): 50 ms at the default
# of 100, which each task's producer and marker consumer waited once; 10-20 ms at 10.
_CLIENT_DEFAULTS = {"reconnect.backoff.ms": 10}
# When a transactional producer first asks for its producer id before that connection is
# up, librdkafka asks again only on a 500 ms timer: about one task in three waited it
# out in init_transactions. A call again after a timeout resumes the same init and asks
# at once, so init_transactions is called in slices, the first this short.
_FIRST_INIT_SLICE = 0.05
# Kafka's answers that a client asks again after a pause, whether or not librdkafka marks
# them retriable: a coordinator loading, unavailable or moved (Kafka's, for a while after
# a start) and, for an init, the abort of a fenced producer's transaction still running.
_ASK_AGAIN = {
    14,  # COORDINATOR_LOAD_IN_PROGRESS
    15,  # COORDINATOR_NOT_AVAILABLE
    16,  # NOT_COORDINATOR
    51,  # CONCURRENT_TRANSACTIONS
}


class RecordProducer:
    """One producer for one task (not thread-safe). Use as a context manager."""

    def __init__(self, options: SinkOptions, extra: dict[str, Any] | None = None) -> None:
        self._ck = require("confluent_kafka")
        self._bootstrap = options.bootstrap_servers
        self._log = ClientLog()
        config = {
            "bootstrap.servers": options.bootstrap_servers,
            "enable.idempotence": True,
            "acks": "all",
            "partitioner": "murmur2_random",  # the Java client's placement of keys
            "linger.ms": 5,
            **_CLIENT_DEFAULTS,
            **options.producer_config,  # a user's kafka.* settings win ...
            **(extra or {}),  # ... except what this sink must set itself
            "logger": self._log,
        }
        self._timeout_s = int(config.get("message.timeout.ms", 300_000)) / 1000
        try:
            self._producer = self._ck.Producer(config)
        except self._ck.KafkaException as exc:
            raise BrokerRequestError(f"cannot create the Kafka producer: {exc}") from None
        self._failure: str | None = None
        self.sent = 0

    def __enter__(self) -> RecordProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        # Nothing to close: a Producer is freed with its last reference; a flush here
        # would wait on records an error is already abandoning.
        return None

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None and self._failure is None:
            self._failure = f"delivery to {msg.topic()}/{msg.partition()} failed: {err.str()}"

    def send(self, records: Records) -> None:
        """Queue one batch of records; a full local queue waits for deliveries."""
        produce, poll = self._producer.produce, self._producer.poll
        delivered = self._delivered
        for topic, partition, key, value, headers in zip(
            records.topics,
            records.partitions,
            records.keys,
            records.values,
            records.headers,
            strict=True,
        ):
            while True:
                try:
                    produce(
                        topic,
                        value,
                        key,
                        partition=partition,
                        headers=headers,
                        on_delivery=delivered,
                    )
                    break
                except BufferError:
                    poll(0.05)
                except self._ck.KafkaException as exc:
                    where = topic if partition < 0 else f"{topic}/{partition}"
                    raise BrokerRequestError(f"cannot produce to {where}: {exc}") from None
            if self._failure is not None:
                self._raise()
        self.sent += len(records)
        poll(0)

    def flush(self) -> None:
        """Wait for every queued record; raise on the first that failed."""
        deadline = time.monotonic() + self._timeout_s + 30
        while self._producer.flush(1.0) > 0:
            if time.monotonic() > deadline:
                raise BrokerRequestError(
                    f"records to {self._bootstrap} still unacknowledged after"
                    f" {self._timeout_s:g}s: {self._log.last_problem or 'no reason given'}"
                )
        if self._failure is not None:
            self._raise()

    def _raise(self) -> None:
        raise BrokerRequestError(f"{self._failure}; the write fails rather than lose records")

    @property
    def producer(self) -> Any:
        return self._producer

    def problem(self) -> str:
        return self._log.last_problem or "no reason given"


class MarkedTransaction:
    """A task's transactional writes, each marked with the micro-batch it wrote.

    Protocol, in order (each step fails the task on error; an unfinished transaction is
    aborted, or fenced by the next producer of the same id):

    1. ``init_transactions`` under the task's ``transactional.id``: every earlier
       producer of the id (an earlier attempt, or a task of a killed driver) is fenced,
       and a transaction it left open is aborted or, if already committing, completed.
    2. ``already_written(batch)``: the marker group's committed offset on the marker
       partition, read as read_committed (stable offsets only). A marker past ``batch``
       means this task's records of that batch are in the topic; write nothing.
    3. ``write``: begin, produce every record, ``send_offsets_to_transaction`` with
       offset ``batch + 1`` on the marker partition, commit.
    """

    def __init__(
        self,
        options: SinkOptions,
        transactional_id: str,
        marker_group: str,
        marker: tuple[str, int],
    ) -> None:
        self._ck = require("confluent_kafka")
        self._records = RecordProducer(options, {"transactional.id": transactional_id})
        self._marker = self._ck.TopicPartition(*marker)
        self._id = transactional_id
        self._group = marker_group
        self._consumer = self._ck.Consumer(
            {
                "bootstrap.servers": options.bootstrap_servers,
                **_CLIENT_DEFAULTS,
                **{k: v for k, v in options.producer_config.items() if _shared(k)},
                "group.id": marker_group,
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "logger": ClientLog(),
            }
        )
        try:
            self._init_transactions()
        except BaseException:
            self._consumer.close()
            raise

    def close(self) -> None:
        self._consumer.close()

    def _init_transactions(self) -> None:
        """Step 1, in growing slices (see ``_FIRST_INIT_SLICE``) up to the request timeout.

        A slice that ends in a retriable error (a coordinator still loading its log, as
        Kafka's is for a while after a start) is called again after a pause as long as
        the slice; librdkafka retries those itself only inside one longer call."""
        ck = self._ck
        init = self._records.producer.init_transactions
        deadline = time.monotonic() + _REQUEST_TIMEOUT
        wait = _FIRST_INIT_SLICE
        while True:
            wait = min(wait, max(deadline - time.monotonic(), 0.001))
            try:
                init(wait)
                return
            except ck.KafkaException as exc:
                error = exc.args[0] if exc.args else None
                timed_out = error is not None and error.code() == ck.KafkaError._TIMED_OUT
                retriable = error is not None and (error.retriable() or error.code() in _ASK_AGAIN)
                if not (timed_out or retriable) or time.monotonic() >= deadline:
                    raise BrokerRequestError(
                        f"init_transactions of transactional.id {self._id} failed: {exc}"
                        f" ({self._records.problem()})"
                    ) from None
                if not timed_out:
                    time.sleep(wait)
            wait = min(wait * 2, 1.0)

    def already_written(self, batch_id: int) -> bool:
        """Whether the marker says ``batch_id`` is written. A coordinator that is moving
        or loading (Kafka answers NOT_COORDINATOR for a while after a start) is asked
        again until the request timeout."""
        ck = self._ck
        deadline = time.monotonic() + _REQUEST_TIMEOUT
        while True:
            try:
                [found] = self._consumer.committed([self._marker], timeout=_REQUEST_TIMEOUT)
                break
            except ck.KafkaException as exc:
                error = exc.args[0] if exc.args else None
                retriable = error is not None and (error.retriable() or error.code() in _ASK_AGAIN)
                if retriable and time.monotonic() < deadline:
                    time.sleep(0.2)
                    continue
                raise BrokerRequestError(
                    f"cannot read the marker of {self._id} (group {self._group}): {exc}"
                ) from None
        marked: int = found.offset
        return marked != _NO_OFFSET and marked > batch_id

    def write(self, batches: Iterable[Records], batch_id: int) -> int:
        producer = self._records.producer
        self._call("begin_transaction", lambda _timeout: producer.begin_transaction())
        try:
            for records in batches:
                self._records.send(records)
            self._records.flush()
            position = self._ck.TopicPartition(
                self._marker.topic,
                self._marker.partition,
                batch_id + 1,
                metadata=f"spark micro-batch {batch_id}",
            )
            self._call(
                "send_offsets_to_transaction",
                lambda timeout: producer.send_offsets_to_transaction(
                    [position], self._consumer.consumer_group_metadata(), timeout
                ),
            )
            self._call("commit_transaction", producer.commit_transaction)
        except BaseException:
            # Fenced or fatal: the next producer of the id aborts it instead.
            with contextlib.suppress(self._ck.KafkaException):
                producer.abort_transaction(_REQUEST_TIMEOUT)
            raise
        return self._records.sent

    def _call(self, step: str, call: Any) -> None:
        try:
            call(_REQUEST_TIMEOUT)
        except self._ck.KafkaException as exc:
            raise BrokerRequestError(
                f"{step} of transactional.id {self._id} failed: {exc} ({self._records.problem()})"
            ) from None


def _shared(key: str) -> bool:
    """Whether a producer setting also applies to the marker's consumer (the connection's
    security and addressing, not the producer's own tuning)."""
    return key.startswith(("security.", "sasl.", "ssl.", "client.", "socket.", "broker."))
