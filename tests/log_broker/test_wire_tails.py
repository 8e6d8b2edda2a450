"""Bytes after a request's end are refused, except the few shapes real clients send
and Kafka ignores."""

from __future__ import annotations

import pytest

from headrace.log_broker._errors import MalformedRequestError
from headrace.log_broker._wire import decode_request

# librdkafka 2.16's Metadata v12 "all topics" request, as it arrives (no size prefix):
# header (api 3, v12, correlation 3, client "rdkafka", no tags), then the topic array's
# four-byte placeholder 00000000 and its real fields 01 00 00.
_HEADER = bytes.fromhex("0003000c00000003000772646b61666b6100")
ALL_TOPICS_FROM_LIBRDKAFKA = _HEADER + bytes.fromhex("00000000010000")


def test_librdkafka_all_topics_metadata_reads_as_all_topics() -> None:
    request = decode_request(ALL_TOPICS_FROM_LIBRDKAFKA)
    assert (request.api_key, request.api_version) == (3, 12)
    assert request.body.topics is None


@pytest.mark.parametrize("tail", ["020000", "010001", "0100", "01000000"])
def test_other_metadata_tails_are_refused(tail: str) -> None:
    with pytest.raises(MalformedRequestError, match="trailing bytes"):
        decode_request(_HEADER + bytes.fromhex("00000000" + tail))
