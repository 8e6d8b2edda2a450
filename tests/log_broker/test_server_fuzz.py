"""Malformed, truncated and oversized requests against a running broker: every API
version it serves with no body and with garbage bodies, then six thousand requests drawn
by Hypothesis, many of them produces whose batches have a valid CRC and malformed content.

The broker must stay up, keep its memory bounded, and keep serving a well-behaved
client on another connection the whole time.
"""

from __future__ import annotations

import io
import socket
import struct
import time
from datetime import timedelta
from pathlib import Path

import psutil
import pytest
from batch_crafting import mutated_batches, produce_body
from brokerproc import BrokerProcess, free_port
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.fetch.v11 import request as fetch
from kio.schema.metadata.v8.request import MetadataRequest
from kio.schema.produce.v8 import request as produce
from kio.schema.request_header.v1.header import RequestHeader as HeaderV1
from kio.schema.request_header.v2.header import RequestHeader as HeaderV2
from kio.schema.types import TopicName
from kio.serial import entity_writer
from kio.static.primitive import Records, i16, i32, i32Timedelta, i64
from rawkafka import RawClient, encode, frame, record_batch

from headrace.log_broker.handlers import build_router

VALID = [
    encode(18, 3, ApiVersionsRequest(client_software_name="fuzz", client_software_version="1")),
    encode(
        3,
        8,
        MetadataRequest(
            topics=None,
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        ),
    ),
    encode(
        0,
        8,
        produce.ProduceRequest(
            acks=i16(-1),
            timeout=i32Timedelta.parse(timedelta(seconds=5)),
            topic_data=(
                produce.TopicProduceData(
                    name=TopicName("fuzz"),
                    partition_data=(
                        produce.PartitionProduceData(
                            index=i32(0), records=Records(record_batch([b"", b"v", b"vv"]))
                        ),
                    ),
                ),
            ),
        ),
    ),
    encode(
        1,
        11,
        fetch.FetchRequest(
            max_wait=i32Timedelta.parse(timedelta(0)),
            min_bytes=i32(0),
            topics=(
                fetch.FetchTopic(
                    topic=TopicName("fuzz"),
                    partitions=(
                        fetch.FetchPartition(
                            partition=i32(0), fetch_offset=i64(0), partition_max_bytes=i32(1 << 20)
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
        ),
    ),
]


def send_and_drain(port: int, data: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            while s.recv(65536):
                pass
        except (ConnectionError, TimeoutError, OSError):
            pass


def ask_api_versions(conn: socket.socket, correlation_id: int) -> None:
    """A well-behaved client's request on its own long-lived connection."""
    conn.sendall(
        frame(
            encode(
                18,
                3,
                ApiVersionsRequest(client_software_name="good", client_software_version="1"),
                correlation_id,
            )
        )
    )
    size = struct.unpack(">i", _recv_exact(conn, 4))[0]
    body = _recv_exact(conn, size)
    assert struct.unpack(">i", body[:4])[0] == correlation_id
    assert struct.unpack(">h", body[4:6])[0] == 0  # no error


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    chunks = b""
    while len(chunks) < n:
        chunk = conn.recv(n - len(chunks))
        assert chunk, "connection closed"
        chunks += chunk
    return chunks


SERVED = [
    (route.api_key, version)
    for route in build_router()
    for version in range(route.min_version, route.max_version + 1)
]

# Bodies every served API version is sent after its header, whatever Hypothesis draws:
# none at all, a lone byte, and runs of bytes that read as huge or negative lengths.
GARBAGE_BODIES = [b"", b"\x00", b"\xff" * 16, b"\x7f" * 64, bytes(range(256))]

# Requests drawn by Hypothesis. Drawing is what costs (about 5 ms a request, most of it
# building mutated batches), not the broker's answers. Six thousand give each of the nine
# kinds in bad_inputs some six hundred draws (the batches, listed twice, twelve hundred,
# beside the 6,000 mutated batches test_batch_fuzz.py appends directly), and no served
# API depends on the count since every one is swept with GARBAGE_BODIES first.
EXAMPLES = 6_000

# The broker's resident memory grows by some 16-18 MiB however many requests it is sent
# (16.4 MiB after 6,900, 17.7 after 20,000): what it loads and caches the first time.
# Anything held per bad request adds to that: 32 MiB over about 6,900 requests fails a
# leak of 2.2 KiB a request, as 64 MiB did over 20,000.
RSS_GROWTH_BOUND = 32 * 2**20


def header_only(api_key: int, version: int) -> bytes:
    """A request header, in the version the API's schema uses, with no body after it."""
    flexible = load_request_schema(api_key, version).__flexible__
    header_cls = HeaderV2 if flexible else HeaderV1
    buf = io.BytesIO()
    entity_writer(header_cls)(
        buf,
        header_cls(
            request_api_key=i16(api_key),
            request_api_version=i16(version),
            correlation_id=i32(7),
            client_id="fuzz",
        ),
    )
    return buf.getvalue()


def assert_topic_decodes(bootstrap: str, topic: str) -> None:
    from headrace.log_broker.records import _batches as _records

    client = RawClient(bootstrap)
    offset, data = 0, b""
    while True:
        body = fetch.FetchRequest(
            max_wait=i32Timedelta.parse(timedelta(0)),
            min_bytes=i32(0),
            forgotten_topics_data=(),
            topics=(
                fetch.FetchTopic(
                    topic=TopicName(topic),
                    partitions=(
                        fetch.FetchPartition(
                            partition=i32(0),
                            fetch_offset=i64(offset),
                            partition_max_bytes=i32(1 << 20),
                        ),
                    ),
                ),
            ),
        )
        data = client.request(1, 11, body).responses[0].partitions[0].records or b""
        if not data:
            break
        for header in _records.scan_batches(data):
            found = _records.decode_records(data, header)
            assert [r.offset for r in found] == list(range(offset, offset + len(found)))
            offset += len(found)
    client.close()
    assert offset > 0


@st.composite
def bad_inputs(draw: st.DrawFn) -> bytes:
    kind = draw(
        st.sampled_from(
            [
                "random",
                "truncated",
                "flipped",
                "huge",
                "short-frame",
                "bad-version",
                "tail",
                "batch",
                "batch",
                "any-api",
            ]
        )
    )
    if kind == "any-api":  # every API the broker serves gets a garbled body
        api_key, version = draw(st.sampled_from(SERVED))
        return frame(header_only(api_key, version) + draw(st.binary(max_size=300)))
    if kind == "batch":  # a well-framed produce whose batch has a valid CRC, bad content
        return frame(encode(0, 8, produce_body("fuzz", draw(mutated_batches()))))
    valid = draw(st.sampled_from(VALID))
    if kind == "random":
        return frame(draw(st.binary(max_size=600)))
    if kind == "truncated":
        cut = draw(st.integers(0, len(valid) - 1))
        return frame(valid[:cut])
    if kind == "flipped":
        data = bytearray(valid)
        for _ in range(draw(st.integers(1, 8))):
            pos = draw(st.integers(0, len(data) - 1))
            data[pos] = draw(st.integers(0, 255))
        return frame(bytes(data))
    if kind == "huge":
        size = draw(st.sampled_from([2**31 - 1, 200 * 2**20, -1, -(2**31)]))
        return struct.pack(">i", size) + draw(st.binary(max_size=64))
    if kind == "short-frame":  # the size prefix promises more than ever arrives
        return struct.pack(">i", len(valid) + draw(st.integers(1, 1000))) + valid
    if kind == "bad-version":
        data = bytearray(valid)
        struct.pack_into(">h", data, 2, draw(st.integers(-5, 200)))
        return frame(bytes(data))
    return frame(valid + draw(st.binary(min_size=1, max_size=50)))


@pytest.mark.slow
def test_fuzzed_requests_leave_broker_serving(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data") as broker:
        assert broker.proc is not None
        process = psutil.Process(broker.proc.pid)
        good = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
        ask_api_versions(good, 1)
        rss_before = process.memory_info().rss
        sent = {"n": 0}
        started = time.monotonic()

        for api_key, version in SERVED:
            for body in GARBAGE_BODIES:
                send_and_drain(broker.port, frame(header_only(api_key, version) + body))
        ask_api_versions(good, 2)
        swept = len(SERVED) * len(GARBAGE_BODIES)

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(bad_inputs())
        def attack(data: bytes) -> None:
            send_and_drain(broker.port, data)
            sent["n"] += 1
            if sent["n"] % 100 == 0:
                ask_api_versions(good, sent["n"])
                assert broker.proc is not None and broker.proc.poll() is None

        attack()
        assert sent["n"] >= EXAMPLES * 3 // 4
        assert broker.proc.poll() is None, broker.log()
        ask_api_versions(good, 10**6)
        good.close()
        growth = process.memory_info().rss - rss_before
        assert growth < RSS_GROWTH_BOUND, f"broker grew by {growth / 2**20:.1f} MiB"

        # Whatever the fuzzed produces stored decodes whole, offsets without a gap.
        assert_topic_decodes(broker.bootstrap, "fuzz")

        from kafka_clients import Confluent

        client = Confluent()
        client.create_topic(broker.bootstrap, "after-fuzz", 1)
        client.produce(broker.bootstrap, "after-fuzz", [(b"k", b"still here")])
        got = client.consume(broker.bootstrap, "after-fuzz", 1, 1)
        assert [g.value for g in got] == [b"still here"]
        assert "handler failed" not in broker.log_path.read_text()
        print(
            f"{swept} swept and {sent['n']} drawn bad requests in"
            f" {time.monotonic() - started:.1f}s,"
            f" rss growth {growth / 2**20:.1f} MiB"
        )


# --------------------------------------------------------------------- the SASL exchange
def _sasl_frames(version: int, mechanism: str, tokens: list[bytes]) -> list[bytes]:
    from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
    from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

    frames = [encode(17, version, SaslHandshakeRequest(mechanism=mechanism))]
    for token in tokens:
        if version == 0:  # after SaslHandshake v0 the tokens travel bare
            frames.append(token)
        else:
            frames.append(encode(36, 2, SaslAuthenticateRequest(auth_bytes=token)))
    return frames


@st.composite
def sasl_attacks(draw: st.DrawFn) -> bytes:
    mechanism = draw(
        st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "", "x" * 300])
    )
    version = draw(st.sampled_from([0, 1]))
    plausible = st.sampled_from(
        [
            b"\0fuzzer\0wrong",
            b"\0\0",
            b"n,,n=fuzzer,r=abc",
            b"n,,n=,r=",
            b"y,,n=a,r=b",
            b"c=biws,r=abc,p=AAAA",
            b"c=biws,r=abc,p=!!!",
            b"n,,m=ext,n=a,r=b",
            b"\xff" * 9,
        ]
    )
    tokens = draw(st.lists(st.one_of(plausible, st.binary(max_size=300)), max_size=4))
    frames = _sasl_frames(version, mechanism, tokens)
    if draw(st.booleans()):  # garble one frame of the exchange
        index = draw(st.integers(0, len(frames) - 1))
        data = bytearray(frames[index] or b"\0")
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        frames[index] = bytes(data)
    # Whatever follows an exchange that did not succeed must never be served.
    frames.append(VALID[draw(st.integers(1, len(VALID) - 1))])
    return b"".join(frame(f) for f in frames)


@pytest.mark.slow
def test_fuzzed_sasl_exchanges_serve_nothing_and_leave_broker_serving(tmp_path: Path) -> None:
    import subprocess
    import sys

    from rawkafka import RawClient

    data = tmp_path / "data"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "headrace",
            "users",
            "add",
            "fuzzer",
            "--password-stdin",
            "--data-dir",
            str(data),
        ],
        input="right\n",
        text=True,
        check=True,
        capture_output=True,
        timeout=60,
    )
    port, metrics_port = free_port(), free_port()
    config = tmp_path / "server.properties"
    # No wait after a failure: the fuzzer tries structure, not passwords.
    config.write_text(
        f"listeners=SASL_PLAINTEXT://127.0.0.1:{port}\n"
        "connection.failed.authentication.delay.ms=0\n"
    )
    metrics = ("--metrics-listen", f"127.0.0.1:{metrics_port}")
    with BrokerProcess(data, *metrics, port=port, config=config) as broker:
        served = {"n": 0, "sent": 0}

        @settings(
            max_examples=800, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )
        @given(sasl_attacks())
        def attack(payload: bytes) -> None:
            served["sent"] += 1
            send_and_drain(port, payload)

        attack()
        assert broker.proc is not None and broker.proc.poll() is None, broker.log()
        log_text = broker.log_path.read_text()
        assert "handler failed" not in log_text
        assert _authentication_failures(metrics_port) > 50  # the exchanges ran
        assert "before SASL authentication" in log_text  # and what followed was refused
        # The fuzzer never authenticated, so none of its produce requests wrote a byte.
        with RawClient(f"127.0.0.1:{port}") as good:
            from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
            from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

            assert good.request(17, 1, SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
            reply = good.request(36, 2, SaslAuthenticateRequest(auth_bytes=b"\0fuzzer\0right"))
            assert reply.error_code == 0
            listed = good.request(
                3,
                8,
                MetadataRequest(
                    topics=None,
                    allow_auto_topic_creation=False,
                    include_cluster_authorized_operations=False,
                    include_topic_authorized_operations=False,
                ),
            )
            assert [t.name for t in listed.topics if t.name == "fuzz"] == []
        assert served["sent"] >= 500


def _authentication_failures(metrics_port: int) -> float:
    """Failed SASL authentications the broker counted (its log says so once per 10 s)."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        families = text_string_to_metric_families(response.read().decode())
        return sum(
            s.value
            for f in families
            for s in f.samples
            if s.name == "headrace_broker_authentication_failures_total"
        )
