"""Large partitions, raw fetching clients and the broker's resident memory, for the tests
of the fetch memory budget (``fetch.response.max.memory.bytes``)."""

from __future__ import annotations

import os
import socket
import struct
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from batch_crafting import good
from kio.schema.fetch.v11 import request as fetch
from kio.schema.produce.v8 import request as produce
from kio.schema.types import TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta, i64
from rawkafka import RawClient, encode, frame

MIB = 1 << 20
TOPIC = "big"
# A batch of 8 records of 120 KiB: just under the topic's max.message.bytes.
_VALUES = [os.urandom(120 * 1024) for _ in range(8)]


def batch() -> bytes:
    return good(_VALUES)


def load(bootstrap: str, partitions: int, bytes_each: int) -> dict[int, int]:
    """Fill partitions 0..n-1 of TOPIC with about ``bytes_each`` bytes each; returns
    each partition's log end offset. Requests are pipelined, answers checked."""
    one = batch()
    per_partition = bytes_each // len(one)
    with RawClient(bootstrap, timeout=60) as client:
        for p in range(partitions):
            body = _produce(p, one)
            payload = frame(encode(0, 8, body, p))
            client.send_raw(payload * per_partition)
            for _ in range(per_partition):
                answer = client.decode(0, 8, client.recv_frame(), p)
                assert answer.responses[0].partition_responses[0].error_code == 0
    return {p: per_partition * len(_VALUES) for p in range(partitions)}


def _produce(partition: int, records: bytes) -> Any:
    return produce.ProduceRequest(
        acks=i16(1),
        timeout=i32Timedelta.parse(timedelta(seconds=30)),
        topic_data=(
            produce.TopicProduceData(
                name=TopicName(TOPIC),
                partition_data=(
                    produce.PartitionProduceData(index=i32(partition), records=Records(records)),
                ),
            ),
        ),
    )


def fetch_request(
    offsets: dict[int, int], max_bytes: int, max_wait_ms: int = 500, correlation_id: int = 1
) -> bytes:
    """A framed Fetch v11 of TOPIC's partitions from ``offsets``."""
    body = fetch.FetchRequest(
        max_wait=i32Timedelta.parse(timedelta(milliseconds=max_wait_ms)),
        min_bytes=i32(1),
        max_bytes=i32(max_bytes),
        forgotten_topics_data=(),
        topics=(
            fetch.FetchTopic(
                topic=TopicName(TOPIC),
                partitions=tuple(
                    fetch.FetchPartition(
                        partition=i32(p),
                        fetch_offset=i64(offset),
                        partition_max_bytes=i32(max_bytes),
                    )
                    for p, offset in sorted(offsets.items())
                ),
            ),
        ),
    )
    return frame(encode(1, 11, body, correlation_id))


@dataclass
class Progress:
    """What one fetching client has received: records and bytes per partition."""

    offsets: dict[int, int]
    bytes_by_partition: dict[int, int] = field(default_factory=dict)
    fetches: int = 0
    empty_answers: int = 0


def recv_frame(sock: socket.socket) -> bytearray:
    """One response frame, read into one buffer (no copy per chunk)."""
    size = struct.unpack(">i", _recv_exact(sock, 4))[0]
    return _recv_exact(sock, size)


def _recv_exact(sock: socket.socket, n: int) -> bytearray:
    data = bytearray(n)
    view = memoryview(data)
    got = 0
    while got < n:
        count = sock.recv_into(view[got:])
        if not count:
            raise ConnectionError("closed by broker")
        got += count
    return data


def fetch_once(sock: socket.socket, progress: Progress, max_bytes: int) -> None:
    """One fetch from where ``progress`` stands; advances it by the batches returned."""
    progress.fetches += 1
    sock.sendall(fetch_request(progress.offsets, max_bytes, correlation_id=progress.fetches))
    answer = RawClient.decode(1, 11, bytes(recv_frame(sock)), progress.fetches)
    got = 0
    for topic in answer.responses:
        for p in topic.partitions:
            assert p.error_code == 0, p
            records = p.records or b""
            got += len(records)
            progress.bytes_by_partition[p.partition_index] = progress.bytes_by_partition.get(
                p.partition_index, 0
            ) + len(records)
            for base, last_delta in batch_offsets(records):
                assert base == progress.offsets[p.partition_index], "a gap or a repeat"
                progress.offsets[p.partition_index] = base + last_delta + 1
    if not got:
        progress.empty_answers += 1


def batch_offsets(records: bytes) -> list[tuple[int, int]]:
    """(base offset, last offset delta) of each whole batch in fetched bytes."""
    found = []
    at = 0
    while at + 61 <= len(records):
        base, length = struct.unpack_from(">qi", records, at)
        if at + 12 + length > len(records):
            break
        (last_delta,) = struct.unpack_from(">i", records, at + 23)
        found.append((base, last_delta))
        at += 12 + length
    return found


def rss_mib(pid: int) -> float:
    return _status_kib(pid, "VmRSS") / 1024


def peak_rss_mib(pid: int) -> float:
    """The largest resident size since the last ``reset_peak_rss``."""
    return _status_kib(pid, "VmHWM") / 1024


def reset_peak_rss(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def _status_kib(pid: int, name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    raise LookupError(name)
