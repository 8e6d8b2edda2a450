"""Raw transaction requests for tests that must send exactly what a client (or
``kafka-transactions``) would: transactional batches with chosen producer ids, the
coordinator steps one request at a time, DescribeProducers and WriteTxnMarkers, and a
read_committed Fetch that reports the last stable offset."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from kio.schema.add_partitions_to_txn.v2 import request as add_partitions
from kio.schema.describe_producers.v0 import request as describe_producers_v0
from kio.schema.end_txn.v2.request import EndTxnRequest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v11 import request as fetch
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.produce.v8 import request as produce
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.schema.write_txn_markers.v1 import request as write_markers
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64
from rawkafka import RawClient

from headrace.log_broker.records import _batches as _records

PRODUCE, FETCH, INIT_PRODUCER_ID = 0, 1, 22
ADD_PARTITIONS_TO_TXN, END_TXN, WRITE_TXN_MARKERS, DESCRIBE_PRODUCERS = 24, 26, 27, 61


def batch(
    values: list[bytes],
    *,
    producer_id: int = -1,
    epoch: int = -1,
    sequence: int = -1,
    transactional: bool = False,
    timestamp_ms: int = 1_700_000_000_000,
) -> bytes:
    records = [_records.Record(i, timestamp_ms + i, b"k", v) for i, v in enumerate(values)]
    return _records.encode_batch(
        records,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        is_transactional=transactional,
    )


def produce_code(
    client: RawClient,
    topic: str,
    records: bytes,
    transactional_id: str | None = None,
    partition: int = 0,
) -> ErrorCode:
    """Produce v8 (acks=all) of ``records`` to one partition; its error code."""
    got = client.request(
        PRODUCE,
        8,
        produce.ProduceRequest(
            transactional_id=None
            if transactional_id is None
            else TransactionalId(transactional_id),
            acks=i16(-1),
            timeout=i32Timedelta.parse(timedelta(seconds=5)),
            topic_data=(
                produce.TopicProduceData(
                    name=TopicName(topic),
                    partition_data=(
                        produce.PartitionProduceData(
                            index=i32(partition), records=Records(records)
                        ),
                    ),
                ),
            ),
        ),
    )
    return ErrorCode(got.responses[0].partition_responses[0].error_code)


@dataclass
class Committed:
    """What a read_committed Fetch returns for one partition."""

    high_watermark: int
    last_stable_offset: int
    values: list[bytes]  # of the records returned, aborted ones left out as a client does
    aborted: list[tuple[int, int]]  # (producer id, first offset)


def read_committed(
    client: RawClient, topic: str, partition: int = 0, fetch_offset: int = 0
) -> Committed:
    got = client.request(
        FETCH,
        11,
        fetch.FetchRequest(
            max_wait=i32Timedelta.parse(timedelta(0)),
            min_bytes=i32(0),
            isolation_level=i8(1),
            forgotten_topics_data=(),
            topics=(
                fetch.FetchTopic(
                    topic=TopicName(topic),
                    partitions=(
                        fetch.FetchPartition(
                            partition=i32(partition),
                            fetch_offset=i64(fetch_offset),
                            partition_max_bytes=i32(1 << 20),
                        ),
                    ),
                ),
            ),
        ),
    )
    [answer] = got.responses[0].partitions
    assert answer.error_code == ErrorCode.none
    aborted = [(a.producer_id, a.first_offset) for a in answer.aborted_transactions or ()]
    data = bytes(answer.records or b"")
    values: list[bytes] = []
    skipping: set[int] = set()
    pending = sorted(aborted, key=lambda a: a[1])
    for header in _records.parse_batches(data):
        while pending and pending[0][1] <= header.base_offset:
            skipping.add(pending.pop(0)[0])
        if header.is_control:
            skipping.discard(header.producer_id)
            continue
        if header.is_transactional and header.producer_id in skipping:
            continue
        values.extend(r.value or b"" for r in _records.decode_records(data, header))
    return Committed(answer.high_watermark, answer.last_stable_offset, values, aborted)


class RawTxn:
    """One transactional producer's coordinator requests, sent one at a time."""

    def __init__(self, client: RawClient, transactional_id: str) -> None:
        self.client, self.tid = client, transactional_id
        got = client.request(
            INIT_PRODUCER_ID,
            4,
            InitProducerIdRequest(
                transactional_id=TransactionalId(transactional_id),
                transaction_timeout=i32Timedelta.parse(timedelta(seconds=60)),
            ),
        )
        assert got.error_code == ErrorCode.none
        self.pid, self.epoch = int(got.producer_id), int(got.producer_epoch)
        self.sequence = 0

    def add_partition(self, topic: str, partition: int = 0) -> ErrorCode:
        got = self.client.request(
            ADD_PARTITIONS_TO_TXN,
            2,
            add_partitions.AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=TransactionalId(self.tid),
                v3_and_below_producer_id=ProducerId(self.pid),
                v3_and_below_producer_epoch=i16(self.epoch),
                v3_and_below_topics=(
                    add_partitions.AddPartitionsToTxnTopic(
                        name=TopicName(topic), partitions=(i32(partition),)
                    ),
                ),
            ),
        )
        return ErrorCode(
            got.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
        )

    def batch(self, values: list[bytes], *, epoch: int | None = None) -> bytes:
        """The next transactional batch of this producer (sequence advanced)."""
        made = batch(
            values,
            producer_id=self.pid,
            epoch=self.epoch if epoch is None else epoch,
            sequence=self.sequence,
            transactional=True,
        )
        self.sequence += len(values)
        return made

    def end(self, commit: bool = True) -> ErrorCode:
        got = self.client.request(
            END_TXN,
            2,
            EndTxnRequest(
                transactional_id=TransactionalId(self.tid),
                producer_id=ProducerId(self.pid),
                producer_epoch=i16(self.epoch),
                committed=commit,
            ),
        )
        return ErrorCode(got.error_code)


def describe_producers(client: RawClient, topic: str, partitions: list[int]) -> Any:
    """DescribeProducers v0 for partitions of one topic, as the admin client sends it
    (``describeProducers``: one request to the partitions' leader)."""
    got = client.request(
        DESCRIBE_PRODUCERS,
        0,
        describe_producers_v0.DescribeProducersRequest(
            topics=(
                describe_producers_v0.TopicRequest(
                    name=TopicName(topic), partition_indexes=tuple(map(i32, partitions))
                ),
            )
        ),
    )
    [answer] = got.topics
    assert answer.name == topic
    return answer.partitions


def abort_marker(
    client: RawClient,
    topic: str,
    partition: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    *,
    commit: bool = False,
) -> ErrorCode:
    """WriteTxnMarkers v1 with one marker for one partition: what the admin client's
    ``abortTransaction`` (``kafka-transactions abort``) sends to the partition's leader."""
    got = client.request(
        WRITE_TXN_MARKERS,
        1,
        write_markers.WriteTxnMarkersRequest(
            markers=(
                write_markers.WritableTxnMarker(
                    producer_id=ProducerId(producer_id),
                    producer_epoch=i16(producer_epoch),
                    transaction_result=commit,
                    topics=(
                        write_markers.WritableTxnMarkerTopic(
                            name=TopicName(topic), partition_indexes=(i32(partition),)
                        ),
                    ),
                    coordinator_epoch=i32(coordinator_epoch),
                ),
            )
        ),
    )
    [marker] = got.markers
    assert marker.producer_id == producer_id
    [result] = marker.topics
    [answer] = result.partitions
    return ErrorCode(answer.error_code)
