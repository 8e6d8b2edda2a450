"""server.properties: listeners, protocol maps, and values that cannot work."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from headrace.base import parse_properties
from headrace.log_broker._server_properties import broker_settings
from headrace.log_broker.security import SecurityConfigError, parse_listeners


def test_listeners_with_custom_names_and_advertised_addresses() -> None:
    listeners = parse_listeners(
        "PLAINTEXT://127.0.0.1:9092,CLIENT://0.0.0.0:9093",
        "CLIENT://broker.example:19093",
        "CLIENT:SASL_SSL",
    )
    assert [(x.name, x.protocol, x.port) for x in listeners] == [
        ("PLAINTEXT", "PLAINTEXT", 9092),
        ("CLIENT", "SASL_SSL", 9093),
    ]
    assert listeners[0].advertised() == ("127.0.0.1", 9092)
    assert listeners[1].advertised() == ("broker.example", 19093)


@pytest.mark.parametrize(
    "listeners,advertised,protocol_map",
    [
        ("PLAINTEXT:9092", None, None),
        ("INTERNAL://127.0.0.1:9092", None, None),
        ("PLAINTEXT://127.0.0.1:9092", "SSL://x:1", None),
        ("A://h:1", None, "A:NOPE"),
        ("PLAINTEXT://h:1,PLAINTEXT://h:2", None, None),
    ],
)
def test_bad_listeners_are_named_in_the_error(
    listeners: str, advertised: str | None, protocol_map: str | None
) -> None:
    with pytest.raises(SecurityConfigError):
        parse_listeners(listeners, advertised, protocol_map)


def test_kafka_keys_become_broker_settings() -> None:
    settings = broker_settings(
        parse_properties(
            "log.dirs=/data\nnum.partitions=3\nlisteners=SASL_SSL://127.0.0.1:0\n"
            "ssl.keystore.location=/k.pem\nssl.client.auth=required\n"
            "sasl.enabled.mechanisms=SCRAM-SHA-512\n"
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n"
            "super.users=User:admin;User:ops\nallow.everyone.if.no.acl.found=true\n"
        )
    )
    security = settings["security"]
    assert settings["data_dir"] == "/data" and settings["num_partitions"] == 3
    assert security.acls_enabled and security.allow_everyone_if_no_acl_found
    assert security.super_users == {"User:admin", "User:ops"}
    assert security.sasl_mechanisms == ("SCRAM-SHA-512",)
    assert security.tls.client_auth == "required"


@pytest.mark.parametrize(
    "text",
    [
        "ssl.keystore.type=JKS\n",
        "sasl.enabled.mechanisms=GSSAPI\n",
        "authorizer.class.name=com.example.Mine\n",
        "allow.everyone.if.no.acl.found=maybe\n",
        "ssl.keystore.location=/k\nssl.client.auth=sometimes\n",
    ],
)
def test_values_that_cannot_work_are_refused(text: str) -> None:
    with pytest.raises(SecurityConfigError):
        broker_settings(parse_properties(text))


def test_flags_override_the_file(tmp_path: Path) -> None:
    from brokerproc import BrokerProcess, free_port

    file_port, flag_port = free_port(), free_port()
    config = tmp_path / "server.properties"
    config.write_text(
        f"log.dirs={tmp_path / 'from-file'}\nnum.partitions=4\n"
        f"listeners=PLAINTEXT://127.0.0.1:{file_port}\n"
    )
    broker = BrokerProcess(
        tmp_path / "from-flag",
        "--listen",
        f"127.0.0.1:{flag_port}",
        "--num-partitions",
        "2",
        port=flag_port,
        config=config,
    )
    with broker:
        from kafka_clients import Confluent

        Confluent().produce(broker.bootstrap, "auto", [(b"k", b"v")])
        with socket.socket() as probe:  # the file's listener was replaced, not added
            assert probe.connect_ex(("127.0.0.1", file_port)) != 0
    assert sorted(p.name for p in (tmp_path / "from-flag").glob("auto-*")) == ["auto-0", "auto-1"]
    assert not (tmp_path / "from-file").exists()
