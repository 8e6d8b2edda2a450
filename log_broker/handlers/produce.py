"""Produce (key 0): append record batches as they came, answer once they are durable.

For each partition in the request, in request order:
1. find the partition (creating the topic when auto-creation is on),
2. a transactional batch must belong to a transaction the coordinator knows
   (``verify_append``: the request's transactional id names the batch's producer id
   and epoch, and AddPartitionsToTxn put this partition in its ongoing transaction),
   else it gets Kafka's error and appends nothing; a batch no coordinator knows of
   would hold the partition's last stable offset for ever. Then batches of
   idempotent producers are checked against the partition's producer state: a retry
   of a batch already written is answered with its original offset and not appended;
   a sequence gap, a fenced epoch or a plain batch inside an open transaction gets its
   error and appends nothing,
3. ``PartitionLog.append`` validates every batch (header, CRC-32C) and patches base
   offsets; a bad batch appends nothing and gets its error code; producer state then
   records the batches (a transactional one opens its producer's transaction there),
4. wake fetches waiting on that partition.
Appends happen before the handler first awaits, so requests pipelined on a connection
are appended in the order they were sent. Only then, for acks=1/all, wait for the group
syncer to fsync every touched log; one fsync round covers many requests. acks=0 gets no
response at all, as the protocol says.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from kio.schema.errors import ErrorCode

from headrace.transactions import (
    AppendPlan,
    ConcurrentTransactionsError,
    Duplicate,
    ProducerFencedError,
    TopicPartition,
    TransactionError,
)

from .. import storage
from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import INTERNAL_TOPICS, BrokerState
from .._txn_partitions import PartitionTxn
from .._wire import Request, response_module
from ..records import _batches as _records
from ..security import Operation, ResourceType
from ._authz import TransactionalIdAuthorizationError, topic_code
from ._codes import error_code_for

API_KEY = 0


def _partition_result(
    m: Any,
    index: int,
    error: ErrorCode,
    base_offset: int = -1,
    log_start_offset: int = -1,
    append_time_ms: int = -1,
    message: str | None = None,
) -> Any:
    append_time = (
        datetime.fromtimestamp(append_time_ms / 1000, UTC) if append_time_ms >= 0 else None
    )
    return make(
        m.PartitionProduceResponse,
        index=index,
        error_code=error,
        base_offset=base_offset,
        log_append_time=append_time,
        log_start_offset=log_start_offset,
        record_errors=(),
        error_message=message,
    )


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    m = response_module(API_KEY, request.api_version)
    acks = body.acks
    if acks not in (0, 1, -1):
        refused = tuple(
            make(
                m.TopicProduceResponse,
                name=t.name,
                partition_responses=tuple(
                    _partition_result(m, p.index, ErrorCode.invalid_required_acks)
                    for p in t.partition_data
                ),
            )
            for t in body.topic_data
        )
        return make(m.ProduceResponse, responses=refused, throttle_time=NO_THROTTLE)

    now_ms = int(time.time() * 1000)
    touched: list[storage.PartitionLog] = []
    responses: list[tuple[str, list[Any]]] = []
    appended: list[tuple[list[Any], int, storage.PartitionLog]] = []  # result slot, log
    txn_refused = (
        None
        if body.transactional_id is None
        or request.session.allows(
            Operation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id
        )
        else ErrorCode.transactional_id_authorization_failed
    )
    for topic_data in body.topic_data:
        results: list[Any] = []
        denied = txn_refused or topic_code(request, Operation.WRITE, topic_data.name)
        if denied is not None:
            responses.append(
                (
                    topic_data.name,
                    [_partition_result(m, p.index, denied) for p in topic_data.partition_data],
                )
            )
            continue
        try:
            topic = state.topic(topic_data.name, auto_create=True)
        except storage.StorageError as exc:
            topic, topic_error = None, error_code_for(exc)
        else:
            topic_error = ErrorCode.unknown_topic_or_partition
        if topic_data.name in INTERNAL_TOPICS:
            topic, topic_error = None, ErrorCode.invalid_topic_exception
        for part in topic_data.partition_data:
            log = None
            if topic is not None and 0 <= part.index < len(topic.partitions):
                log = topic.partitions[part.index]
            if log is None:
                results.append(_partition_result(m, part.index, topic_error))
                continue
            payload = bytearray(part.records or b"")
            try:
                txn_state, verdict = _check_producers(state, log, payload, body.transactional_id)
                if isinstance(verdict, Duplicate):
                    touched.append(log)  # the original may still await its fsync
                    results.append(
                        _partition_result(
                            m, part.index, ErrorCode.none, verdict.base_offset, log.log_start_offset
                        )
                    )
                    continue
                result = log.append(payload, now_ms=now_ms)
                if txn_state is not None and verdict is not None:
                    txn_state.producers.commit(verdict, result.base_offset)
                    txn_state.changed = True
            except TransactionError as exc:
                results.append(_partition_result(m, part.index, _code(exc), message=str(exc)))
                continue
            except (storage.StorageError, storage.RecordError) as exc:
                results.append(
                    _partition_result(m, part.index, error_code_for(exc), message=str(exc))
                )
                continue
            touched.append(log)
            state.notifier.notify((log.topic, log.partition))
            appended.append((results, len(results), log))
            results.append(
                _partition_result(
                    m,
                    part.index,
                    ErrorCode.none,
                    result.base_offset,
                    result.log_start_offset,
                    result.log_append_time_ms,
                )
            )
        responses.append((topic_data.name, results))

    if acks == 0:
        if touched:
            _sync_in_background(state, touched)
        return None
    if touched:
        failed = await state.syncer.sync_many(touched)
        for results, slot, log in appended:  # not durable: say so, not "appended"
            if log in failed:
                results[slot] = _partition_result(
                    m, log.partition, error_code_for(failed[log]), message=str(failed[log])
                )
    return make(
        m.ProduceResponse,
        throttle_time=NO_THROTTLE,
        responses=tuple(
            make(m.TopicProduceResponse, name=name, partition_responses=tuple(results))
            for name, results in responses
        ),
    )


def _check_producers(
    state: BrokerState,
    log: storage.PartitionLog,
    payload: bytearray,
    transactional_id: str | None,
) -> tuple[PartitionTxn | None, AppendPlan | Duplicate | None]:
    if _records.without_producer_ids(payload):
        return None, None
    # Headers only, without CRC checks: append validates the batches right after.
    headers = list(_records.scan_batches(payload, verify_crc=False))
    if all(header.producer_id < 0 for header in headers):
        return None, None
    for header in headers:
        if header.is_transactional and header.producer_id >= 0:
            _verify(state, log, header, transactional_id)
    txn_state = state.txn.partitions.get(log)
    return txn_state, txn_state.producers.validate(headers)


def _verify(
    state: BrokerState,
    log: storage.PartitionLog,
    header: _records.BatchHeader,
    transactional_id: str | None,
) -> None:
    # Kafka refuses transactional records in a request without a transactional id as
    # unauthorized (KafkaApis), before any partition is looked at; here per partition.
    if transactional_id is None:
        raise TransactionalIdAuthorizationError(
            "a transactional batch needs the request's transactional id"
        )
    state.txn.coordinator.verify_append(
        transactional_id,
        header.producer_id,
        header.producer_epoch,
        TopicPartition(log.topic, log.partition),
    )


def _code(exc: TransactionError) -> ErrorCode:
    """Kafka's answers to a produce whose verification failed (ReplicaManager and
    AddPartitionsToTxnManager, for Produce before v12): a fenced producer gets
    INVALID_PRODUCER_EPOCH, which producers handle there; a transaction still
    completing gets NOT_ENOUGH_REPLICAS, which every client retries."""
    if isinstance(exc, ProducerFencedError):
        return ErrorCode.invalid_producer_epoch
    if isinstance(exc, ConcurrentTransactionsError):
        return ErrorCode.not_enough_replicas
    return ErrorCode(exc.error_code)


def _sync_in_background(state: BrokerState, logs: list[storage.PartitionLog]) -> None:
    # acks=0 promises nothing, but the bytes should still reach the disk soon.
    for log in logs:
        task = asyncio.ensure_future(state.syncer.sync(log))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())


ROUTE = Route(API_KEY, 3, 8, handle)
