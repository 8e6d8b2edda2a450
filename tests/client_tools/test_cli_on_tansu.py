"""The client commands against Tansu, a Kafka-compatible broker nobody here wrote: they
are clients of any cluster, not of the built-in broker only.

What Tansu 0.6 lacks is pinned too, so a change on either side shows: it grants no
producer id (``produce`` falls back to a plain producer and says so), has no
CreatePartitions, and keeps a consumer a member after it leaves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from brokerproc import TansuProcess
from clirun import headrace, table


@pytest.fixture(scope="module")
def bs() -> Iterator[list[str]]:
    tansu = TansuProcess()
    try:
        yield ["--bootstrap-servers", tansu.bootstrap]
    finally:
        tansu.stop()


def test_topics_produce_consume_groups(capsys: pytest.CaptureFixture[str], bs: list[str]) -> None:
    created = headrace(
        capsys, "topics", "create", "orders", "--partitions", "3", "--replication-factor", "1", *bs
    )
    assert created.out == "created topic orders with 3 partition(s)\n"
    headrace(capsys, "topics", "create", "orders", "--if-not-exists", *bs)
    assert ["orders", "3"] in table(headrace(capsys, "topics", "list", *bs).out, "TOPIC")
    listed = json.loads(headrace(capsys, "topics", "list", "-o", "json", *bs).out)
    assert {"topic": "orders", "partitions": 3} in listed
    described = json.loads(headrace(capsys, "topics", "describe", "orders", "-o", "json", *bs).out)
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]

    lines = "".join(f"customer-{i % 4}:order-{i}\n" for i in range(12))
    produced = headrace(
        capsys,
        "produce",
        "orders",
        "--key-separator",
        ":",
        "--header",
        "source=cli",
        *bs,
        stdin=lines,
    )
    assert "produced 12 record(s) to orders" in produced.err
    assert "sending without idempotence" in produced.err  # Tansu grants no producer id

    consumed = headrace(
        capsys,
        "consume",
        "orders",
        "--group",
        "audit",
        "--from-beginning",
        "--max-messages",
        "12",
        "--timeout-ms",
        "20000",
        "-o",
        "json",
        *bs,
    ).out
    records = [json.loads(line) for line in consumed.splitlines()]
    assert sorted(r["value"] for r in records) == sorted(f"order-{i}" for i in range(12))
    assert {r["headers"][0][0] for r in records} == {"source"}
    partition_of: dict[Any, Any] = {}
    for r in records:
        assert partition_of.setdefault(r["key"], r["partition"]) == r["partition"]
    first = min(records, key=lambda r: (r["partition"], r["offset"]))
    again = headrace(
        capsys,
        "consume",
        "orders",
        "--partition",
        str(first["partition"]),
        "--offset",
        str(first["offset"]),
        "--max-messages",
        "1",
        "--format",
        r"%k %v\n",
        *bs,
    ).out
    assert again == f"{first['key']} {first['value']}\n"

    groups = json.loads(headrace(capsys, "groups", "list", "-o", "json", *bs).out)
    assert "audit" in [g["group"] for g in groups]
    data = json.loads(headrace(capsys, "groups", "describe", "audit", "-o", "json", *bs).out)
    committed = {o["partition"]: o for o in data["offsets"]}
    assert sum(o["current_offset"] for o in committed.values()) == 12
    # Lag is what the cluster's end offsets make it (Tansu's ListOffsets for "latest" can
    # trail what was written, so its exact value is Tansu's, not ours).
    assert all(o["lag"] == o["log_end_offset"] - o["current_offset"] for o in committed.values()), (
        json.dumps(data)
    )
    assert "CURRENT-OFFSET" in headrace(capsys, "groups", "describe", "audit", *bs).out

    headrace(
        capsys, "topics", "alter", "orders", "--partitions", "4", *bs, check=False
    ).one_line_error("the cluster does not offer this request (CreatePartitions")
    assert headrace(capsys, "topics", "delete", "orders", *bs).out == "deleted topic orders\n"
    headrace(capsys, "topics", "delete", "orders", "--if-exists", *bs)
