"""The broker's CPU per request at 1,000 partitions, without a client's own cost in the way.

    .venv/bin/python benchmarks/broker_request_cpu.py [--partitions 1000] [--requests 5000]
        [--rounds 3] [--other-python PYTHON]

What librdkafka sends a broker holding many partitions, written as raw frames and
pipelined on one connection (all sent, then all answers read): Produce v8 requests of
one partition's 100-record batch each (acks=all), round robin over the partitions, as
librdkafka sends one request per partition; then one ListOffsets v5 per partition and
Fetch v11 requests for every partition from offset 0 (read_committed), as a consumer
starting at the beginning does. The broker runs with ``--fsync never`` so the disk's
flushes stay out of the figure. Reported: the broker process's CPU time (user and
system) divided by the requests it answered, medians over the rounds. Unlike records
per second, this does not move with the machine's load. ``--other-python`` runs
another checkout's broker in the same rounds (run from outside both checkouts, as
``broker_partitions.py`` says why).
"""

from __future__ import annotations

import argparse
import io
import os
import socket
import struct
import sys
import threading
from datetime import timedelta
from statistics import median
from typing import Any

import psutil
from broker_partitions import create_topic
from broker_throughput import BROKER_PIDS, headrace_broker
from kio.schema.fetch.v11 import request as fetch
from kio.schema.list_offsets.v5 import request as list_offsets
from kio.schema.produce.v8 import request as produce
from kio.schema.request_header.v1.header import RequestHeader
from kio.schema.types import BrokerId, TopicName
from kio.serial import entity_writer
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64

from headrace.log_broker.records._batches import Record, encode_batch

TOPIC = "partitions"
PRODUCE, FETCH, LIST_OFFSETS = 0, 1, 2
EARLIEST = -2


def frame(api_key: int, version: int, correlation_id: int, body: Any) -> bytes:
    buffer = io.BytesIO()
    header = RequestHeader(
        request_api_key=i16(api_key),
        request_api_version=i16(version),
        correlation_id=i32(correlation_id),
        client_id="bench",
    )
    entity_writer(RequestHeader)(buffer, header)
    entity_writer(type(body))(buffer, body)
    return struct.pack(">i", buffer.tell()) + buffer.getvalue()


def produce_frames(partitions: int, requests: int) -> list[bytes]:
    batch = encode_batch([Record(i, 1_700_000_000_000, b"key", b"x" * 100) for i in range(100)])
    return [
        frame(
            PRODUCE,
            8,
            n,
            produce.ProduceRequest(
                acks=i16(-1),
                timeout=i32Timedelta.parse(timedelta(seconds=30)),
                topic_data=(
                    produce.TopicProduceData(
                        name=TopicName(TOPIC),
                        partition_data=(
                            produce.PartitionProduceData(
                                index=i32(n % partitions), records=Records(batch)
                            ),
                        ),
                    ),
                ),
            ),
        )
        for n in range(requests)
    ]


def list_offsets_frames(partitions: int) -> list[bytes]:
    return [
        frame(
            LIST_OFFSETS,
            5,
            p,
            list_offsets.ListOffsetsRequest(
                replica_id=BrokerId(-1),
                isolation_level=i8(1),
                topics=(
                    list_offsets.ListOffsetsTopic(
                        name=TopicName(TOPIC),
                        partitions=(
                            list_offsets.ListOffsetsPartition(
                                partition_index=i32(p),
                                current_leader_epoch=i32(-1),
                                timestamp=i64(EARLIEST),
                            ),
                        ),
                    ),
                ),
            ),
        )
        for p in range(partitions)
    ]


def fetch_frames(partitions: int, requests: int) -> list[bytes]:
    wanted = tuple(
        fetch.FetchPartition(
            partition=i32(p),
            current_leader_epoch=i32(-1),
            fetch_offset=i64(0),
            log_start_offset=i64(-1),
            partition_max_bytes=i32(1 << 20),
        )
        for p in range(partitions)
    )
    body = fetch.FetchRequest(
        replica_id=BrokerId(-1),
        max_wait=i32Timedelta.parse(timedelta(0)),
        min_bytes=i32(1),
        max_bytes=i32(50 << 20),
        isolation_level=i8(1),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(fetch.FetchTopic(topic=TopicName(TOPIC), partitions=wanted),),
        forgotten_topics_data=(),
        rack_id="",
    )
    return [frame(FETCH, 11, n, body) for n in range(requests)]


def pipeline(bootstrap: str, frames: list[bytes]) -> None:
    """Send every frame on one connection while reading the answers."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=120) as sock:
        sending = threading.Thread(target=sock.sendall, args=(b"".join(frames),))
        sending.start()
        answers = sock.makefile("rb")
        for _ in frames:
            (size,) = struct.unpack(">i", answers.read(4))
            if len(answers.read(size)) != size:
                raise RuntimeError("the broker closed the connection mid-answer")
        sending.join()


def cpu_us_per_request(bootstrap: str, frames: list[bytes]) -> float:
    broker = psutil.Process(BROKER_PIDS[bootstrap])
    before = broker.cpu_times()
    pipeline(bootstrap, frames)
    after = broker.cpu_times()
    spent = after.user + after.system - before.user - before.system
    return spent / len(frames) * 1e6


def measure(python: str, partitions: int, requests: int) -> tuple[float, float, float]:
    """CPU us per produce, per ListOffsets and per 1,000-partition fetch partition."""
    with headrace_broker("never", python=python) as bootstrap:
        create_topic(bootstrap, partitions)
        pipeline(bootstrap, produce_frames(partitions, partitions))  # every log opened once
        produced = cpu_us_per_request(bootstrap, produce_frames(partitions, requests))
        listed = cpu_us_per_request(bootstrap, list_offsets_frames(partitions))
        fetched = cpu_us_per_request(bootstrap, fetch_frames(partitions, 3)) / partitions
    return produced, listed, fetched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--other-python", metavar="PYTHON")
    args = parser.parse_args()
    brokers = {"headrace": sys.executable}
    if args.other_python:
        brokers["other headrace"] = args.other_python
    print(
        f"{args.requests:,} produce requests over {args.partitions:,} partitions, then a"
        f" ListOffsets per partition and 3 fetches of every partition; load average"
        f" {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
        flush=True,
    )
    runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in brokers}
    for _ in range(args.rounds):
        for name, python in brokers.items():
            run = measure(python, args.partitions, args.requests)
            runs[name].append(run)
            print(f"{name:<16} {format_run(run)}", flush=True)
    print(f"\nmedians; load average now {os.getloadavg()[0]:.1f}")
    for name, measured in runs.items():
        produced, listed, fetched = zip(*measured, strict=True)
        print(f"{name:<16} {format_run((median(produced), median(listed), median(fetched)))}")


def format_run(run: tuple[float, float, float]) -> str:
    produced, listed, fetched = run
    return (
        f"produce {produced:6.1f} us CPU/request   list_offsets {listed:6.1f} us CPU/request"
        f"   fetch {fetched:6.1f} us CPU/partition"
    )


if __name__ == "__main__":
    main()
