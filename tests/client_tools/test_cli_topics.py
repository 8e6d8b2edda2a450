"""``headrace topics``: every action and flag, against the built-in broker."""

from __future__ import annotations

import json
from typing import Any

import pytest
from brokerproc import BrokerProcess, free_port
from clirun import headrace, table


@pytest.fixture
def bs(broker_process: BrokerProcess) -> list[str]:
    return ["--bootstrap-servers", broker_process.bootstrap]


def _describe(capsys: pytest.CaptureFixture[str], topic: str, bs: list[str]) -> dict[str, Any]:
    described: dict[str, Any] = json.loads(
        headrace(capsys, "topics", "describe", topic, "-o", "json", *bs).out
    )
    return described


def test_create_list_describe_delete(capsys: pytest.CaptureFixture[str], bs: list[str]) -> None:
    out = headrace(
        capsys,
        "topics",
        "create",
        "orders",
        "--partitions",
        "3",
        "--replication-factor",
        "1",
        "--config",
        "retention.ms=3600000",
        *bs,
    ).out
    assert out == "created topic orders with 3 partition(s)\n"
    # No --partitions or --replication-factor: the broker's defaults (-1 on the wire).
    assert headrace(capsys, "topics", "create", "defaults", *bs).out == "created topic defaults\n"

    listing = headrace(capsys, "topics", "list", *bs).out
    assert ["orders", "3"] in table(listing, "TOPIC") and ["defaults", "1"] in table(
        listing, "TOPIC"
    )
    as_json = json.loads(headrace(capsys, "topics", "list", "-o", "json", *bs).out)
    assert {"topic": "orders", "partitions": 3} in as_json

    lines = "".join(f"customer-{i % 4}:order-{i}\n" for i in range(30))
    headrace(capsys, "produce", "orders", "--key-separator", ":", *bs, stdin=lines)
    described = headrace(capsys, "topics", "describe", "orders", *bs).out
    assert "Topic: orders  Partitions: 3" in described
    rows = table(described, "PARTITION")
    assert sum(int(r[3]) for r in rows) == 30 and [r[0] for r in rows] == ["0", "1", "2"]
    configs = {r[0]: (r[1], r[2]) for r in table(described, "CONFIG")}
    assert configs["headrace.table.partition.by"] == ("", "default")
    assert configs["retention.ms"] == ("3600000", "override")
    assert configs["cleanup.policy"] == ("delete", "default")

    data = _describe(capsys, "orders", bs)
    assert [p["partition"] for p in data["partitions"]] == [0, 1, 2]
    assert sum(p["end_offset"] - p["start_offset"] for p in data["partitions"]) == 30
    assert all(p["leader"] >= 0 and p["replicas"] == p["isr"] for p in data["partitions"])
    # Bytes on disk (DescribeLogDirs): a partition with records takes more than an empty one.
    sizes = {p["partition"]: p["size_bytes"] for p in data["partitions"]}
    held = {p["partition"]: p["end_offset"] - p["start_offset"] for p in data["partitions"]}
    assert all((sizes[p] > 0) == (held[p] > 0) for p in sizes), (sizes, held)
    assert [int(r[4]) for r in rows] == [sizes[p] for p in (0, 1, 2)]
    assert {"name": "retention.ms", "value": "3600000", "source": "override"} in data["configs"]

    assert headrace(capsys, "topics", "delete", "orders", *bs).out == "deleted topic orders\n"
    assert "orders" not in headrace(capsys, "topics", "list", *bs).out


def test_if_not_exists_and_if_exists(capsys: pytest.CaptureFixture[str], bs: list[str]) -> None:
    headrace(capsys, "topics", "create", "twice", *bs)
    again = headrace(capsys, "topics", "create", "twice", *bs, check=False)
    again.one_line_error("cannot create topic 'twice': TOPIC_ALREADY_EXISTS")
    assert headrace(capsys, "topics", "create", "twice", "--if-not-exists", *bs).code == 0
    headrace(capsys, "topics", "delete", "twice", *bs)
    gone = headrace(capsys, "topics", "delete", "twice", *bs, check=False)
    gone.one_line_error("cannot delete topic 'twice': UNKNOWN_TOPIC_OR_PARTITION")
    assert headrace(capsys, "topics", "delete", "twice", "--if-exists", *bs).code == 0


def test_alter_adds_partitions_and_changes_configs(
    capsys: pytest.CaptureFixture[str], bs: list[str]
) -> None:
    headrace(
        capsys,
        "topics",
        "create",
        "growing",
        "--partitions",
        "2",
        "--config",
        "retention.ms=1000000",
        "--config",
        "segment.ms=600000",
        *bs,
    )
    out = headrace(
        capsys,
        "topics",
        "alter",
        "growing",
        "--partitions",
        "5",
        "--config",
        "cleanup.policy=compact",
        "--delete-config",
        "segment.ms",
        *bs,
    ).out
    assert "now has 5 partition(s)" in out and "altered configs" in out
    data = _describe(capsys, "growing", bs)
    assert [p["partition"] for p in data["partitions"]] == [0, 1, 2, 3, 4]
    overrides = {c["name"]: c["value"] for c in data["configs"] if c["source"] == "override"}
    assert overrides == {"retention.ms": "1000000", "cleanup.policy": "compact"}
    # Records go to the new partitions too (with a key: the topic is compacted now).
    headrace(
        capsys,
        "produce",
        "growing",
        "--partition",
        "4",
        "--key-separator",
        ":",
        *bs,
        stdin="k:late\n",
    )
    assert _describe(capsys, "growing", bs)["partitions"][4]["end_offset"] == 1

    shrink = headrace(capsys, "topics", "alter", "growing", "--partitions", "3", *bs, check=False)
    shrink.one_line_error("can only increase it", code=2)
    nothing = headrace(capsys, "topics", "alter", "growing", *bs, check=False)
    nothing.one_line_error("give --partitions, --add-config (or --config) or --delete-config", 2)
    bad = headrace(
        capsys, "topics", "alter", "growing", "--config", "retention.ms=soon", *bs, check=False
    )
    bad.one_line_error("INVALID_CONFIG")


def test_kafka_topics_spellings(capsys: pytest.CaptureFixture[str], bs: list[str]) -> None:
    """The flags of kafka-topics.sh and kafka-configs.sh beside our own spellings."""
    out = headrace(capsys, "topics", "create", "--topic", "spelt", "--partitions", "2", *bs).out
    assert out == "created topic spelt with 2 partition(s)\n"
    assert _describe(capsys, "spelt", bs)["topic"] == "spelt"
    assert len(json.loads(headrace(capsys, "topics", "describe", "--topic", "spelt", "-o", "json", *bs).out)["partitions"]) == 2  # fmt: skip
    # --add-config as kafka-configs takes it: pairs at commas, a list value in brackets.
    headrace(
        capsys, "topics", "alter", "--topic", "spelt",
        "--add-config", "retention.ms=5000,cleanup.policy=[compact,delete]",
        "--add-config", "segment.ms=700000",
        *bs,
    )  # fmt: skip
    overrides = {
        c["name"]: c["value"]
        for c in _describe(capsys, "spelt", bs)["configs"]
        if c["source"] == "override"
    }
    assert overrides == {
        "retention.ms": "5000",
        "cleanup.policy": "compact,delete",
        "segment.ms": "700000",
    }
    # --delete-config takes a comma-separated list, as kafka-configs does.
    headrace(capsys, "topics", "alter", "spelt", "--delete-config", "retention.ms,segment.ms", *bs)
    overrides = {
        c["name"]: c["value"]
        for c in _describe(capsys, "spelt", bs)["configs"]
        if c["source"] == "override"
    }
    assert overrides == {"cleanup.policy": "compact,delete"}
    headrace(capsys, "configs", "alter", "--topic", "spelt", "--delete-config", "cleanup.policy,", *bs)  # fmt: skip
    assert not [c for c in _describe(capsys, "spelt", bs)["configs"] if c["source"] == "override"]

    # Both spellings at once must agree; neither is a usage error.
    headrace(capsys, "topics", "create", "spelt", "--topic", "spelt", "--if-not-exists", *bs)
    two = headrace(capsys, "topics", "create", "a", "--topic", "b", *bs, check=False)
    assert two.code == 2 and "two topics given: 'a' and 'b'" in two.err
    assert two.err.startswith("usage: headrace topics create")
    headrace(capsys, "topics", "describe", *bs, check=False).one_line_error(
        "give the topic: TOPIC or --topic TOPIC", code=2
    )

    # --exclude-internal leaves out __consumer_offsets and the like (a group makes it).
    headrace(capsys, "produce", "--topic", "spelt", *bs, stdin="x\n")
    headrace(capsys, "consume", "--topic", "spelt", "--group", "g", "--from-beginning", "--max-messages", "1", *bs)  # fmt: skip
    every = {row[0] for row in table(headrace(capsys, "topics", "list", *bs).out, "TOPIC")}
    assert "__consumer_offsets" in every and "spelt" in every
    public = headrace(capsys, "topics", "list", "--exclude-internal", "-o", "json", *bs).out
    assert {t["topic"] for t in json.loads(public)} == {t for t in every if not t.startswith("__")}

    assert headrace(capsys, "topics", "delete", "--topic", "spelt", *bs).out == (
        "deleted topic spelt\n"
    )


def test_errors_are_one_line_with_names_and_exit_codes(
    capsys: pytest.CaptureFixture[str], bs: list[str]
) -> None:
    headrace(capsys, "topics", "create", "bad/name", *bs, check=False).one_line_error(
        "cannot create topic 'bad/name': INVALID_TOPIC_EXCEPTION"
    )
    headrace(
        capsys, "topics", "create", "many-copies", "--replication-factor", "3", *bs, check=False
    ).one_line_error("INVALID_REPLICATION_FACTOR")
    missing = headrace(capsys, "topics", "describe", "no-such-topic", *bs, check=False)
    missing.one_line_error("topic 'no-such-topic' does not exist: UNKNOWN_TOPIC_OR_PARTITION")
    # Describing a missing topic must not create it (auto-creation is on by default).
    assert "no-such-topic" not in headrace(capsys, "topics", "list", *bs).out

    usage = headrace(capsys, "topics", "create", "x", "--config", "retention.ms", *bs, check=False)
    assert usage.code == 2 and "expected KEY=VALUE" in usage.err
    headrace(capsys, "topics", "create", "x", "--partitions", "0", *bs, check=False).one_line_error(
        "--partitions must be at least 1", code=2
    )

    nobody = headrace(
        capsys, "topics", "list", "--bootstrap-servers", f"127.0.0.1:{free_port()}", check=False
    )
    nobody.one_line_error("cannot reach a broker")
