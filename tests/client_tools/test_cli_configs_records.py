"""``headrace configs describe|alter`` (topics and the broker) and ``headrace records delete``."""

from __future__ import annotations

import json

import pytest
from brokerproc import BrokerProcess
from clirun import headrace, table


@pytest.fixture
def bs(broker_process: BrokerProcess) -> list[str]:
    return ["--bootstrap-servers", broker_process.bootstrap]


def _overrides(capsys: pytest.CaptureFixture[str], topic: str, bs: list[str]) -> dict[str, str]:
    data = json.loads(
        headrace(capsys, "configs", "describe", "--topic", topic, "-o", "json", *bs).out
    )
    return {c["name"]: c["value"] for c in data["configs"] if c["source"] == "override"}


def test_topic_configs(capsys: pytest.CaptureFixture[str], bs: list[str]) -> None:
    headrace(capsys, "topics", "create", "settings", "--config", "retention.ms=60000", *bs)
    out = headrace(capsys, "configs", "describe", "--topic", "settings", *bs).out
    rows = {r[0]: r[1:] for r in table(out, "CONFIG")}
    assert rows["retention.ms"] == ["60000", "override"]
    assert rows["cleanup.policy"] == ["delete", "default"]

    headrace(
        capsys,
        "configs",
        "alter",
        "--topic",
        "settings",
        "--add-config",
        "segment.ms=3600000,cleanup.policy=compact",
        "--add-config",
        "retention.bytes=1000",
        *bs,
    )
    assert _overrides(capsys, "settings", bs) == {
        "retention.ms": "60000",
        "segment.ms": "3600000",
        "cleanup.policy": "compact",
        "retention.bytes": "1000",
    }
    headrace(
        capsys,
        "configs",
        "alter",
        "--topic",
        "settings",
        "--delete-config",
        "retention.ms",
        "--delete-config",
        "segment.ms",
        *bs,
    )
    assert _overrides(capsys, "settings", bs) == {
        "cleanup.policy": "compact",
        "retention.bytes": "1000",
    }

    headrace(
        capsys,
        "configs",
        "alter",
        "--topic",
        "settings",
        "--delete-config",
        "retention.ms",
        *bs,
        check=False,
    ).one_line_error("not overridden", code=2)
    headrace(
        capsys, "configs", "alter", "--topic", "settings", "--add-config", "nokey", *bs, check=False
    ).one_line_error("expected KEY=VALUE", code=2)
    headrace(
        capsys,
        "configs",
        "alter",
        "--topic",
        "settings",
        "--add-config",
        "no.such.config=1",
        *bs,
        check=False,
    ).one_line_error("INVALID_CONFIG")
    headrace(capsys, "configs", "alter", "--topic", "settings", *bs, check=False).one_line_error(
        "give --add-config", code=2
    )
    headrace(capsys, "configs", "describe", "--topic", "absent", *bs, check=False).one_line_error(
        "UNKNOWN_TOPIC_OR_PARTITION"
    )
    assert headrace(capsys, "configs", "describe", *bs, check=False).code == 2


def test_broker_configs(capsys: pytest.CaptureFixture[str], bs: list[str]) -> None:
    out = headrace(capsys, "configs", "describe", "--broker", *bs).out
    assert out.startswith("Configs of broker 1\n")
    rows = {r[0]: r[1:] for r in table(out, "CONFIG")}
    assert rows["group.initial.rebalance.delay.ms"] == ["0", "static-broker"]
    data = json.loads(
        headrace(capsys, "configs", "describe", "--broker", "1", "-o", "json", *bs).out
    )
    assert data["broker"] == "1" and any(c["name"] == "broker.id" for c in data["configs"])
    # The built-in broker's configs are static: it says so, by name.
    refused = headrace(
        capsys,
        "configs",
        "alter",
        "--broker",
        "--add-config",
        "log.retention.ms=1",
        *bs,
        check=False,
    )
    refused.one_line_error("INVALID_REQUEST")


def test_records_delete(capsys: pytest.CaptureFixture[str], bs: list[str]) -> None:
    headrace(capsys, "topics", "create", "trimmed", "--partitions", "2", *bs)
    for p in range(2):
        headrace(
            capsys,
            "produce",
            "trimmed",
            "--partition",
            str(p),
            *bs,
            stdin="".join(f"r{i}\n" for i in range(6)),
        )
    out = headrace(
        capsys, "records", "delete", "--topic", "trimmed", "--partition", "0", "--offset", "4", *bs
    ).out
    assert out == "trimmed partition 0: records below offset 4 deleted\n"
    left = headrace(
        capsys,
        "consume",
        "trimmed",
        "--partition",
        "0",
        "--from-beginning",
        "--timeout-ms",
        "1000",
        *bs,
    ).out
    assert left == "r4\nr5\n"
    headrace(
        capsys, "records", "delete", "--topic", "trimmed", "--partition", "1", "--offset", "-1", *bs
    )
    data = json.loads(headrace(capsys, "topics", "describe", "trimmed", "-o", "json", *bs).out)
    assert [(p["start_offset"], p["end_offset"]) for p in data["partitions"]] == [(4, 6), (6, 6)]

    headrace(
        capsys,
        "records",
        "delete",
        "--topic",
        "trimmed",
        "--partition",
        "0",
        "--offset",
        "99",
        *bs,
        check=False,
    ).one_line_error("OFFSET_OUT_OF_RANGE")
    headrace(
        capsys,
        "records",
        "delete",
        "--topic",
        "trimmed",
        "--partition",
        "9",
        "--offset",
        "1",
        *bs,
        check=False,
    ).one_line_error("has no partition 9", code=2)
    headrace(
        capsys,
        "records",
        "delete",
        "--topic",
        "gone",
        "--partition",
        "0",
        "--offset",
        "1",
        *bs,
        check=False,
    ).one_line_error("does not exist")
