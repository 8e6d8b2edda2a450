"""Several listeners on one broker: each client is told the address it came in through;
TLS below 1.2 is refused; open listeners off this host are warned about."""

from __future__ import annotations

import asyncio
import logging
import ssl
from pathlib import Path
from typing import Any

import pytest
from certs import make_certificates
from kio.schema.metadata.v8.request import MetadataRequest
from rawkafka import RawClient

from headrace.log_broker import Broker
from headrace.log_broker.security import (
    BrokerSecurity,
    SecurityConfig,
    parse_listeners,
    security_from_properties,
)


async def test_metadata_advertises_the_listener_the_client_used(tmp_path: Path) -> None:
    listeners = parse_listeners(
        "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        "PLAINTEXT://public.example:9092,INTERNAL://internal.example:9093",
        "INTERNAL:PLAINTEXT",
    )
    async with Broker(tmp_path / "data", listeners=listeners) as broker:
        for name, host, port in (
            ("PLAINTEXT", "public.example", 9092),
            ("INTERNAL", "internal.example", 9093),
        ):

            def ask(address: str = broker.address(name)) -> Any:
                with RawClient(address) as client:
                    return client.request(
                        3,
                        8,
                        MetadataRequest(
                            topics=(),
                            allow_auto_topic_creation=False,
                            include_cluster_authorized_operations=False,
                            include_topic_authorized_operations=False,
                        ),
                    )

            response = await asyncio.to_thread(ask)
            assert [(b.host, b.port) for b in response.brokers] == [(host, port)]


async def test_tls_is_1_2_or_newer(tmp_path: Path) -> None:
    certs = await asyncio.to_thread(make_certificates, tmp_path / "certs")
    security = security_from_properties({"ssl.keystore.location": str(certs.server_keystore)})
    async with Broker(
        tmp_path / "data", listeners=parse_listeners("SSL://127.0.0.1:0"), security=security
    ) as broker:
        host, port = broker.address("SSL").split(":")
        modern = ssl.create_default_context(cafile=str(certs.ca))
        _, writer = await asyncio.open_connection(host, int(port), ssl=modern)
        assert writer.get_extra_info("ssl_object").version() in ("TLSv1.2", "TLSv1.3")
        writer.close()
        # The client's own OpenSSL may refuse TLS 1.1 before the server could, so the
        # server's floor is read off the context it serves with.
        assert broker.state.security is not None
        assert broker.state.security.tls is not None
        assert broker.state.security.tls.minimum_version is ssl.TLSVersion.TLSv1_2


def test_open_listener_off_this_host_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    security = BrokerSecurity.open(tmp_path, SecurityConfig(), ())
    listeners = parse_listeners(
        "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://0.0.0.0:9093,WIDE://0.0.0.0:9094",
        protocol_map="WIDE:PLAINTEXT",
    )
    with caplog.at_level(logging.WARNING, logger="headrace.broker"):
        security.warn_about_open_listeners(listeners)
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "WIDE on 0.0.0.0:9094" in warned[0]


def test_inline_pem_keystore_serves_tls(tmp_path: Path) -> None:
    from headrace.log_broker.security._tls import server_context

    certs = make_certificates(tmp_path / "certs")
    settings = security_from_properties(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": certs.server_cert.read_text(),
            "ssl.keystore.key": certs.server_key.read_text(),
            "ssl.truststore.certificates": certs.ca.read_text(),
            "ssl.client.auth": "required",
        }
    ).tls
    assert settings is not None
    context = server_context(settings)
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.minimum_version is ssl.TLSVersion.TLSv1_2
