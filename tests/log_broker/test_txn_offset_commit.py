"""TxnOffsetCommit over a real socket: from v3 (KIP-447) the consumer's group metadata
fences a zombie, whose offsets are refused and never committed; a current member's
offsets become visible with the transaction's commit; v0 requests and v3 requests
without group metadata are fenced by producer epoch only, as in Kafka."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from kio.schema.add_offsets_to_txn.v2.request import AddOffsetsToTxnRequest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.end_txn.v2.request import EndTxnRequest
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.offset_fetch.v5.request import OffsetFetchRequest, OffsetFetchRequestTopic
from kio.schema.sync_group.v3.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.schema.txn_offset_commit.v0 import request as txn_commit_v0
from kio.schema.txn_offset_commit.v3 import request as txn_commit_v3
from kio.schema.types import GroupId, TopicName, TransactionalId
from kio.static.primitive import i32, i32Timedelta
from rawkafka import RawClient, create_topic

from headrace.log_broker import Broker

TOPIC = "src"
JOIN_GROUP, SYNC_GROUP, OFFSET_FETCH, CREATE_TOPICS = 11, 14, 9, 19
INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT = 22, 25, 26, 28


class Txn:
    """One transactional producer, driven request by request."""

    def __init__(self, client: RawClient, transactional_id: str, group: str) -> None:
        self.client, self.tid, self.group = client, transactional_id, group
        got = client.request(
            INIT_PRODUCER_ID,
            4,
            InitProducerIdRequest(
                transactional_id=TransactionalId(transactional_id),
                transaction_timeout=i32Timedelta.parse(timedelta(seconds=60)),
            ),
        )
        assert got.error_code == ErrorCode.none
        self.pid, self.epoch = got.producer_id, got.producer_epoch

    def add_offsets(self) -> None:
        got = self.client.request(
            ADD_OFFSETS_TO_TXN,
            2,
            AddOffsetsToTxnRequest(
                transactional_id=TransactionalId(self.tid),
                producer_id=self.pid,
                producer_epoch=self.epoch,
                group_id=GroupId(self.group),
            ),
        )
        assert got.error_code == ErrorCode.none

    def commit_offset(
        self, offset: int, generation: int = -1, member_id: str = "", version: int = 3
    ) -> ErrorCode:
        """TxnOffsetCommit of ``offset`` for partition 0; the partition's error code."""
        m: Any = txn_commit_v3 if version == 3 else txn_commit_v0
        partition = (
            m.TxnOffsetCommitRequestPartition(
                partition_index=0, committed_offset=offset, committed_metadata=""
            ),
        )
        fields: dict[str, Any] = (
            {"generation_id": generation, "member_id": member_id} if version == 3 else {}
        )
        got = self.client.request(
            TXN_OFFSET_COMMIT,
            version,
            m.TxnOffsetCommitRequest(
                transactional_id=self.tid,
                group_id=self.group,
                producer_id=self.pid,
                producer_epoch=self.epoch,
                **fields,
                topics=(m.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=partition),),
            ),
        )
        [topic] = got.topics
        [answer] = topic.partitions
        return ErrorCode(answer.error_code)

    def end(self, commit: bool = True) -> None:
        got = self.client.request(
            END_TXN,
            2,
            EndTxnRequest(
                transactional_id=TransactionalId(self.tid),
                producer_id=self.pid,
                producer_epoch=self.epoch,
                committed=commit,
            ),
        )
        assert got.error_code == ErrorCode.none


def join(
    client: RawClient, group: str, *, session_ms: int = 30_000, rebalance_ms: int = 30_000
) -> tuple[str, int]:
    """Join as a consumer and take the assignment; returns (member id, generation)."""

    def request(member_id: str) -> Any:
        return client.request(
            JOIN_GROUP,
            5,
            JoinGroupRequest(
                group_id=GroupId(group),
                session_timeout=i32Timedelta.parse(timedelta(milliseconds=session_ms)),
                rebalance_timeout=i32Timedelta.parse(timedelta(milliseconds=rebalance_ms)),
                member_id=member_id,
                group_instance_id=None,
                protocol_type="consumer",
                protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
            ),
        )

    first = request("")
    assert first.error_code == ErrorCode.member_id_required
    joined = request(first.member_id)
    assert joined.error_code == ErrorCode.none
    synced = client.request(
        SYNC_GROUP,
        3,
        SyncGroupRequest(
            group_id=GroupId(group),
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            group_instance_id=None,
            assignments=(SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b""),),
        ),
    )
    assert synced.error_code == ErrorCode.none
    return joined.member_id, joined.generation_id


def committed(client: RawClient, group: str) -> int:
    got = client.request(
        OFFSET_FETCH,
        5,
        OffsetFetchRequest(
            group_id=GroupId(group),
            topics=(OffsetFetchRequestTopic(name=TopicName(TOPIC), partition_indexes=(i32(0),)),),
        ),
    )
    return int(got.topics[0].partitions[0].committed_offset)


async def run(data_dir: Path, scenario: Any, **settings: Any) -> None:
    async with Broker(data_dir, group_initial_rebalance_delay_ms=0, **settings) as broker:

        def connected() -> None:  # a blocking client: off the broker's event loop
            client = RawClient(broker.bootstrap_servers)
            try:
                create_topic(client, TOPIC)
                scenario(client)
            finally:
                client.close()

        await asyncio.to_thread(connected)


async def test_txn_offset_commit_is_advertised_up_to_v5(tmp_path: Path) -> None:
    def scenario(client: RawClient) -> None:
        got = client.request(
            18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        versions = {k.api_key: (k.min_version, k.max_version) for k in got.api_keys}
        assert versions[TXN_OFFSET_COMMIT] == (0, 5)

    await run(tmp_path / "data", scenario)


async def test_a_stale_generation_commits_nothing_a_current_one_commits_at_end_txn(
    tmp_path: Path,
) -> None:
    def scenario(client: RawClient) -> None:
        member, generation = join(client, "g")
        txn = Txn(client, "copier", "g")
        txn.add_offsets()
        assert txn.commit_offset(17, generation - 1, member) == ErrorCode.illegal_generation
        assert txn.commit_offset(17, generation, "ghost") == ErrorCode.unknown_member_id
        txn.end(commit=True)
        assert committed(client, "g") == -1  # the refused offsets were never staged

        txn.add_offsets()
        assert txn.commit_offset(42, generation, member) == ErrorCode.none
        assert committed(client, "g") == -1  # staged, not visible before the commit
        txn.end(commit=True)
        assert committed(client, "g") == 42

    await run(tmp_path / "data", scenario)


async def test_a_member_whose_session_expired_cannot_commit_but_epoch_only_requests_can(
    tmp_path: Path,
) -> None:
    def scenario(client: RawClient) -> None:
        member, generation = join(client, "g", session_ms=500)
        txn = Txn(client, "copier", "g")
        txn.add_offsets()
        assert txn.commit_offset(5, generation, member) == ErrorCode.none
        time.sleep(1.5)  # no heartbeats: the session expires and the member is removed
        assert txn.commit_offset(9, generation, member) == ErrorCode.unknown_member_id
        # No group metadata (v0, as aiokafka sends; or v3 with -1 and no member id):
        # only the producer epoch is checked.
        assert txn.commit_offset(10, version=0) == ErrorCode.none
        assert txn.commit_offset(11) == ErrorCode.none
        txn.end(commit=True)
        assert committed(client, "g") == 11

    await run(tmp_path / "data", scenario, group_min_session_timeout_ms=100)


async def test_a_member_dropped_by_a_rebalance_cannot_commit(tmp_path: Path) -> None:
    def scenario(client: RawClient) -> None:
        zombie, old_generation = join(client, "g", rebalance_ms=500)
        # A second consumer joins; the first never rejoins, so when the join phase
        # times out (the longest rebalance timeout of the members) it is dropped and
        # the newcomer takes the next generation alone.
        successor, generation = join(client, "g", rebalance_ms=500)
        assert generation == old_generation + 1
        txn = Txn(client, "copier", "g")
        txn.add_offsets()
        assert txn.commit_offset(7, old_generation, zombie) == ErrorCode.unknown_member_id
        assert txn.commit_offset(8, generation, successor) == ErrorCode.none
        txn.end(commit=True)
        assert committed(client, "g") == 8

    await run(tmp_path / "data", scenario)
