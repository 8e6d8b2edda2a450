"""The hand-written codecs agree with kio's generic ones: the same bytes written, the same
entities read, the same damaged requests refused."""

from __future__ import annotations

import io
import struct
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.index import load_payload_module
from kio.schema.errors import ErrorCode
from kio.schema.response_header.v0.header import ResponseHeader
from kio.schema.types import TopicName
from kio.serial import entity_writer
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i32Timedelta
from rawkafka import encode, record_batch

from headrace.log_broker._entities import make
from headrace.log_broker._errors import MalformedRequestError
from headrace.log_broker._hot_codecs import (
    FETCH_VERSIONS,
    PRODUCE_VERSIONS,
    encode_fetch_response,
    encode_produce_response,
)
from headrace.log_broker._wire import Request, decode_request, encode_response, response_module


def kio_frame(correlation_id: int, body: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(ResponseHeader)(buffer, ResponseHeader(correlation_id=i32(correlation_id)))
    entity_writer(type(body))(buffer, body)
    data = buffer.getvalue()
    return struct.pack(">i", len(data)) + data


def produce_response(version: int, topics: list[tuple[str, list[dict[str, Any]]]]) -> Any:
    m = response_module(0, version)

    def record_errors(p: dict[str, Any]) -> tuple[Any, ...]:
        listed = p.pop("record_errors", ())
        if not hasattr(m, "BatchIndexAndErrorMessage"):  # before v8
            return ()
        return tuple(
            make(m.BatchIndexAndErrorMessage, batch_index=i, batch_index_error_message=message)
            for i, message in listed
        )

    return make(
        m.ProduceResponse,
        throttle_time=timedelta(milliseconds=7),
        responses=tuple(
            make(
                m.TopicProduceResponse,
                name=name,
                partition_responses=tuple(
                    make(
                        m.PartitionProduceResponse,
                        record_errors=record_errors(p),
                        **p,
                    )
                    for p in partitions
                ),
            )
            for name, partitions in topics
        ),
    )


APPENDED = {
    "index": 3,
    "error_code": ErrorCode.none,
    "base_offset": 1_234_567_890_123,
    "log_append_time": None,
    "log_start_offset": 17,
    "error_message": None,
}
REFUSED = {
    "index": 0,
    "error_code": ErrorCode.corrupt_message,
    "base_offset": -1,
    "log_append_time": datetime(2026, 11, 24, 20, 0, 0, 123000, tzinfo=UTC),
    "log_start_offset": -1,
    "error_message": "CRC mismatch ü",
    "record_errors": [(2, "bad record"), (5, None)],
}
CASES: dict[str, list[tuple[str, list[dict[str, Any]]]]] = {
    "one partition": [("events", [APPENDED])],
    "errors and append time": [("events", [APPENDED, REFUSED])],
    "several topics": [("a", [REFUSED]), ("b-ü", [APPENDED, APPENDED]), ("c", [])],
    "no topics": [],
}


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
@pytest.mark.parametrize("case", CASES)
def test_produce_response_bytes_match_kio(version: int, case: str) -> None:
    topics = [(name, [dict(p) for p in partitions]) for name, partitions in CASES[case]]
    body = produce_response(version, topics)
    expected = kio_frame(41, body)
    assert encode_produce_response(version, 41, body) == expected
    assert encode_response(0, version, 41, body) == expected


@settings(max_examples=60, deadline=None)
@given(
    version=st.sampled_from(PRODUCE_VERSIONS),
    index=st.integers(0, 2**31 - 1),
    code=st.sampled_from(list(ErrorCode)),
    base_offset=st.integers(-1, 2**63 - 1),
    log_start_offset=st.integers(-1, 2**63 - 1),
    append_ms=st.none() | st.integers(0, 2**42),
    message=st.none() | st.text(max_size=40),
    name=st.text(min_size=1, max_size=40),
)
def test_any_produce_partition_answer_matches_kio(
    version: int,
    index: int,
    code: ErrorCode,
    base_offset: int,
    log_start_offset: int,
    append_ms: int | None,
    message: str | None,
    name: str,
) -> None:
    append_time = None if append_ms is None else datetime.fromtimestamp(append_ms / 1000, UTC)
    partition = {
        "index": index,
        "error_code": code,
        "base_offset": base_offset,
        "log_append_time": append_time,
        "log_start_offset": log_start_offset,
        "error_message": message,
    }
    body = produce_response(version, [(name, [partition])])
    assert encode_produce_response(version, 9, body) == kio_frame(9, body)


def test_a_string_too_long_for_its_length_is_refused() -> None:
    body = produce_response(8, [("t", [dict(APPENDED, error_message="x" * 40_000)])])
    with pytest.raises(ValueError, match="too long"):
        encode_produce_response(8, 1, body)


# ---------------------------------------------------------------- produce requests


def kio_decode(frame: bytes) -> Request | str:
    """What the generic path makes of ``frame``: the request, or the refusal."""
    with patch("headrace.log_broker._wire.hot_decoder", return_value=None):
        return decode_or_refusal(frame)


def decode_or_refusal(frame: bytes) -> Request | str:
    try:
        return decode_request(frame, "/127.0.0.1")
    except MalformedRequestError:
        return "refused"


def produce_request(
    version: int,
    topics: Topics,
    transactional_id: str | None = None,
    acks: int = -1,
) -> Any:
    m = load_payload_module(0, version, EntityType.request)
    return m.ProduceRequest(
        transactional_id=transactional_id,
        acks=i16(acks),
        timeout=i32Timedelta.parse(timedelta(milliseconds=1500)),
        topic_data=tuple(
            m.TopicProduceData(
                name=TopicName(name),
                partition_data=tuple(
                    m.PartitionProduceData(index=i32(index), records=records)
                    for index, records in partitions
                ),
            )
            for name, partitions in topics
        ),
    )


BATCH = record_batch([b"value"] * 3)
Topics = list[tuple[str, list[tuple[int, bytes | None]]]]
REQUESTS: dict[str, tuple[Topics, str | None]] = {
    "one partition": ([("events", [(0, BATCH)])], None),
    "transactional": ([("events", [(2, BATCH)])], "txn-ü"),
    "null records and many": ([("a", [(0, None), (1, BATCH)]), ("b", []), ("c", [(7, b"")])], None),
    "no topics": ([], None),
}


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
@pytest.mark.parametrize("case", REQUESTS)
def test_produce_request_decodes_as_kio_decodes_it(version: int, case: str) -> None:
    topics, transactional_id = REQUESTS[case]
    frame = encode(0, version, produce_request(version, topics, transactional_id), 77)
    decoded = decode_or_refusal(frame)
    assert decoded == kio_decode(frame)
    assert isinstance(decoded, Request)
    assert (decoded.correlation_id, decoded.client_id, decoded.client_host) == (
        77,
        "test",
        "/127.0.0.1",
    )


@settings(max_examples=300, deadline=None)
@given(
    version=st.sampled_from(PRODUCE_VERSIONS),
    case=st.sampled_from(list(REQUESTS)),
    cut=st.integers(0, 400),
    changes=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=3),
    tail=st.binary(max_size=3),
)
def test_damaged_produce_requests_are_refused_as_kio_refuses_them(
    version: int, case: str, cut: int, changes: list[tuple[int, int]], tail: bytes
) -> None:
    topics, transactional_id = REQUESTS[case]
    frame = bytearray(encode(0, version, produce_request(version, topics, transactional_id)))
    for at, value in changes:
        if 4 <= at < len(frame):  # keep the api key and version: the same codec is chosen
            frame[at] = value
    damaged = bytes(frame[: max(len(frame) - cut, 4)]) + tail
    assert decode_or_refusal(damaged) == kio_decode(damaged)


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
def test_null_lists_are_refused(version: int) -> None:
    """kio reads a null (-1) topic or partition list, which the schema does not allow,
    as None, and the handler could only fail on it: the request is refused instead, by
    the generic path's length guard as by the hand-written codec."""
    no_topics = encode(0, version, produce_request(version, []))
    null_topics = no_topics[:-4] + b"\xff\xff\xff\xff"
    no_partitions = encode(0, version, produce_request(version, [("t", [])]))
    null_partitions = no_partitions[:-4] + b"\xff\xff\xff\xff"
    for frame in (null_topics, null_partitions):
        assert kio_decode(frame) == "refused"
        assert decode_or_refusal(frame) == "refused"


# ---------------------------------------------------------------- fetch responses


def fetch_response(version: int, topics: list[tuple[str, list[dict[str, Any]]]]) -> Any:
    m = response_module(1, version)
    return make(
        m.FetchResponse,
        throttle_time=timedelta(milliseconds=3),
        error_code=ErrorCode.none,
        session_id=0,
        responses=tuple(
            make(
                m.FetchableTopicResponse,
                topic=name,
                partitions=tuple(
                    make(
                        m.PartitionData,
                        **dict(
                            p,
                            aborted_transactions=None
                            if p["aborted_transactions"] is None
                            else tuple(
                                make(m.AbortedTransaction, producer_id=pid, first_offset=first)
                                for pid, first in p["aborted_transactions"]
                            ),
                        ),
                    )
                    for p in partitions
                ),
            )
            for name, partitions in topics
        ),
    )


def fetched(index: int, records: bytes | None, aborted: list[tuple[int, int]] | None) -> Any:
    return {
        "partition_index": index,
        "error_code": ErrorCode.none if records is not None else ErrorCode.offset_out_of_range,
        "high_watermark": 1_000_000 + index,
        "last_stable_offset": 999_999,
        "log_start_offset": 12,
        "aborted_transactions": aborted,
        "preferred_read_replica": -1,
        "records": records,
    }


FETCHES: dict[str, list[tuple[str, list[dict[str, Any]]]]] = {
    "one partition": [("events", [fetched(0, BATCH, None)])],
    "read committed": [("events", [fetched(1, BATCH, [(7, 100), (9, 250)]), fetched(2, b"", [])])],
    "errors and topics": [
        ("a", [fetched(0, None, None)]),
        ("b-ü", []),
        ("c", [fetched(5, b"", None)]),
    ],
    "no topics": [],
}


@pytest.mark.parametrize("version", FETCH_VERSIONS)
@pytest.mark.parametrize("case", FETCHES)
def test_fetch_response_bytes_match_kio(version: int, case: str) -> None:
    body = fetch_response(version, FETCHES[case])
    expected = kio_frame(12, body)
    assert encode_fetch_response(version, 12, body) == expected
    assert encode_response(1, version, 12, body) == expected


@settings(max_examples=60, deadline=None)
@given(
    version=st.sampled_from(FETCH_VERSIONS),
    index=st.integers(0, 2**31 - 1),
    offsets=st.tuples(*[st.integers(-1, 2**63 - 1)] * 3),
    aborted=st.none() | st.lists(st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1))),
    records=st.none() | st.binary(max_size=200),
    name=st.text(min_size=1, max_size=40),
)
def test_any_fetched_partition_matches_kio(
    version: int,
    index: int,
    offsets: tuple[int, int, int],
    aborted: list[tuple[int, int]] | None,
    records: bytes | None,
    name: str,
) -> None:
    partition = dict(fetched(index, records, aborted))
    partition["high_watermark"], partition["last_stable_offset"], partition["log_start_offset"] = (
        offsets
    )
    body = fetch_response(version, [(name, [partition])])
    assert encode_fetch_response(version, 5, body) == kio_frame(5, body)
