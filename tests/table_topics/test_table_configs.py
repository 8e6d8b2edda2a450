"""The table settings of a topic (``headrace.table.*``) through our commands and through
librdkafka's admin client: set at create, altered, described, and bad values refused with
INVALID_CONFIG and the reason."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator

import pytest
from brokerproc import BrokerProcess
from clirun import headrace
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

DEFAULTS = {
    "headrace.table.mode": "disabled",
    "headrace.table.partition.by": "",
    "headrace.table.commit.interval.ms": "5000",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker without a table location: the settings are the subject, not the tables."""
    with BrokerProcess(tmp_path_factory.mktemp("configs") / "data") as proc:
        yield proc


def described(admin: AdminClient, topic: str) -> dict[str, tuple[str, bool]]:
    """The table settings as librdkafka reads them: value and whether it is the default."""
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=15)
    return {
        name: (entry.value, entry.is_default)
        for name, entry in entries.items()
        if name.startswith("headrace.table.")
    }


def cli_overrides(
    capsys: pytest.CaptureFixture[str], topic: str, bs: list[str]
) -> dict[str, tuple[str, str]]:
    data = json.loads(
        headrace(capsys, "configs", "describe", "--topic", topic, "-o", "json", *bs).out
    )
    return {
        c["name"]: (c["value"], c["source"])
        for c in data["configs"]
        if c["name"].startswith("headrace.table.")
    }


def test_a_topic_reports_the_defaults(
    capsys: pytest.CaptureFixture[str], broker: BrokerProcess, admin: AdminClient
) -> None:
    bs = ["--bootstrap-servers", broker.bootstrap]
    headrace(capsys, "topics", "create", "plain", *bs)
    assert described(admin, "plain") == {name: (v, True) for name, v in DEFAULTS.items()}
    assert cli_overrides(capsys, "plain", bs) == {
        name: (v, "default") for name, v in DEFAULTS.items()
    }


def test_create_and_alter_through_the_commands(
    capsys: pytest.CaptureFixture[str], broker: BrokerProcess, admin: AdminClient
) -> None:
    bs = ["--bootstrap-servers", broker.bootstrap]
    headrace(
        capsys,
        "topics",
        "create",
        "orders",
        "--partitions",
        "3",
        "--config",
        "headrace.table.mode=key_value",
        "--config",
        "headrace.table.partition.by=hour(timestamp)",
        *bs,
    )
    assert described(admin, "orders") == {
        "headrace.table.mode": ("key_value", False),
        "headrace.table.partition.by": ("hour(timestamp)", False),
        "headrace.table.commit.interval.ms": ("5000", True),
    }
    headrace(
        capsys,
        "configs",
        "alter",
        "--topic",
        "orders",
        "--add-config",
        "headrace.table.mode=value_schema_latest,headrace.table.commit.interval.ms=250",
        "--delete-config",
        "headrace.table.partition.by",
        *bs,
    )
    assert cli_overrides(capsys, "orders", bs) == {
        "headrace.table.mode": ("value_schema_latest", "override"),
        "headrace.table.partition.by": ("", "default"),
        "headrace.table.commit.interval.ms": ("250", "override"),
    }


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("headrace.table.mode", "iceberg", "must be one of disabled, key_value"),
        ("headrace.table.mode", "", "must be one of disabled"),
        ("headrace.table.partition.by", "day(timestamp)", "hour(timestamp)"),
        ("headrace.table.partition.by", "a b", "a column name"),
        ("headrace.table.commit.interval.ms", "0", "at least 1"),
        ("headrace.table.commit.interval.ms", "soon", "expected long"),
    ],
)
def test_bad_values_are_refused_everywhere(
    capsys: pytest.CaptureFixture[str],
    broker: BrokerProcess,
    admin: AdminClient,
    name: str,
    value: str,
    reason: str,
) -> None:
    bs = ["--bootstrap-servers", broker.bootstrap]
    topic = f"refused-{zlib.crc32(f'{name}={value}'.encode())}"
    done = headrace(
        capsys, "topics", "create", topic, "--config", f"{name}={value}", *bs, check=False
    )
    assert done.code != 0 and "INVALID_CONFIG" in done.err and reason in done.err, done
    # not created half way: the topic does not exist
    assert topic not in admin.list_topics(timeout=10).topics

    headrace(capsys, "topics", "create", topic, *bs)
    done = headrace(
        capsys,
        "configs",
        "alter",
        "--topic",
        topic,
        "--add-config",
        f"{name}={value}",
        *bs,
        check=False,
    )
    assert done.code != 0 and "INVALID_CONFIG" in done.err and reason in done.err, done

    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)],
    )
    with pytest.raises(KafkaException) as refused:
        admin.incremental_alter_configs([resource])[resource].result(timeout=15)
    error = refused.value.args[0]
    assert error.name() == "INVALID_CONFIG" and reason in error.str(), error
    # nothing was applied
    assert described(admin, topic) == {n: (v, True) for n, v in DEFAULTS.items()}


def test_a_third_party_admin_client_creates_alters_and_deletes(admin: AdminClient) -> None:
    futures = admin.create_topics(
        [NewTopic("payments", 2, config={"headrace.table.mode": "key_value"})]
    )
    futures["payments"].result(timeout=15)
    assert described(admin, "payments")["headrace.table.mode"] == ("key_value", False)

    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        "payments",
        incremental_configs=[
            ConfigEntry(
                "headrace.table.partition.by",
                "partition",
                incremental_operation=AlterConfigOpType.SET,
            ),
            ConfigEntry(
                "headrace.table.commit.interval.ms",
                "1000",
                incremental_operation=AlterConfigOpType.SET,
            ),
            ConfigEntry("headrace.table.mode", "", incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(timeout=15)
    assert described(admin, "payments") == {
        "headrace.table.mode": ("disabled", True),
        "headrace.table.partition.by": ("partition", False),
        "headrace.table.commit.interval.ms": ("1000", False),
    }
