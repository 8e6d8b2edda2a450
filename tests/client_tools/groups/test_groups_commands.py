"""``headrace groups``: list, describe, delete and reset-offsets with kafka-consumer-groups'
flags, against a broker process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from brokerproc import BrokerProcess, free_port
from clirun import headrace, table


@pytest.fixture
def bs(broker_process: BrokerProcess) -> list[str]:
    return ["--bootstrap-servers", broker_process.bootstrap]


def committed(out: str) -> dict[int, tuple[str, str, str]]:
    """partition -> (current offset, log end offset, lag) from ``groups describe``."""
    return {int(r[1]): (r[2], r[3], r[4]) for r in table(out, "TOPIC")}


def test_list_describe_delete(capsys: pytest.CaptureFixture[str], bs: list[str]) -> None:
    headrace(capsys, "topics", "create", "payments", "--partitions", "3", *bs)
    lines = "".join(f"customer-{i % 5}:payment-{i}\n" for i in range(30))
    headrace(capsys, "produce", "payments", "--key-separator", ":", *bs, stdin=lines)
    headrace(
        capsys,
        "consume",
        "payments",
        "--group",
        "billing",
        "--from-beginning",
        "--max-messages",
        "30",
        *bs,
    )

    listing = table(headrace(capsys, "groups", "list", *bs).out, "GROUP")
    assert ["billing", "Empty", "0", "consumer"] in listing
    as_json = json.loads(headrace(capsys, "groups", "list", "-o", "json", *bs).out)
    assert {
        "group": "billing",
        "state": "Empty",
        "members": 0,
        "protocol_type": "consumer",
    } in as_json

    described = headrace(capsys, "groups", "describe", "billing", *bs).out
    assert "State: Empty" in described and "has no active members" in described
    rows = committed(described)
    assert sorted(rows) == [0, 1, 2]
    assert sum(int(current) for current, _, _ in rows.values()) == 30
    assert all(current == end and lag == "0" for current, end, lag in rows.values())
    data = json.loads(headrace(capsys, "groups", "describe", "billing", "-o", "json", *bs).out)
    assert (data["group"], data["state"], data["members"]) == ("billing", "Empty", [])
    assert [(o["partition"], o["lag"]) for o in data["offsets"]] == [(0, 0), (1, 0), (2, 0)]
    assert sum(o["current_offset"] for o in data["offsets"]) == 30

    assert headrace(capsys, "groups", "delete", "billing", *bs).out == "deleted group billing\n"
    assert "billing" not in headrace(capsys, "groups", "list", *bs).out
    headrace(capsys, "groups", "delete", "billing", *bs, check=False).one_line_error(
        "does not exist"
    )
    headrace(capsys, "groups", "describe", "billing", *bs, check=False).one_line_error(
        "does not exist"
    )


def test_reset_offsets_plans_then_executes(
    capsys: pytest.CaptureFixture[str], bs: list[str]
) -> None:
    headrace(capsys, "topics", "create", "events", "--partitions", "3", *bs)
    headrace(capsys, "topics", "create", "other", *bs)
    for p in range(3):  # 10 records per partition, timestamps 1000, 1001, ...
        for i in range(10):
            headrace(
                capsys,
                "produce",
                "events",
                "--partition",
                str(p),
                "--timestamp",
                str(1000 + i),
                *bs,
                stdin=f"e{p}-{i}\n",
            )
    recent = "".join(f"r{i}\n" for i in range(4))
    headrace(capsys, "produce", "other", *bs, stdin=recent)  # timestamps: now
    headrace(
        capsys,
        "consume",
        "events",
        "--group",
        "etl",
        "--from-beginning",
        "--max-messages",
        "30",
        *bs,
    )
    headrace(
        capsys, "consume", "other", "--group", "etl", "--from-beginning", "--max-messages", "4", *bs
    )

    def plan(*flags: str) -> dict[tuple[str, int], tuple[int | None, int]]:
        out = headrace(capsys, "groups", "reset-offsets", "etl", "-o", "json", *flags, *bs)
        return {
            (o["topic"], o["partition"]): (o["current_offset"], o["new_offset"])
            for o in json.loads(out.out)["offsets"]
        }

    def current() -> dict[tuple[str, int], int]:
        data = json.loads(headrace(capsys, "groups", "describe", "etl", "-o", "json", *bs).out)
        return {(o["topic"], o["partition"]): o["current_offset"] for o in data["offsets"]}

    # A dry run by default: the plan is printed, nothing moves.
    dry = headrace(
        capsys, "groups", "reset-offsets", "etl", "--topic", "events", "--to-earliest", *bs
    )
    assert table(dry.out, "TOPIC") == [["events", str(p), "10", "0"] for p in range(3)]
    assert "dry run" in dry.err and "--execute" in dry.err
    assert set(current().values()) == {10, 4}

    assert plan("--topic", "events:0,2", "--to-offset", "3") == {
        ("events", 0): (10, 3),
        ("events", 2): (10, 3),
    }
    assert plan("--topic", "events:1", "--to-offset", "99") == {("events", 1): (10, 10)}
    assert plan("--topic", "events:1", "--shift-by", "-4") == {("events", 1): (10, 6)}
    assert plan("--topic", "events:1", "--shift-by", "-40") == {("events", 1): (10, 0)}
    assert plan("--topic", "events:1", "--to-datetime", "1970-01-01T00:00:01.007+00:00") == {
        ("events", 1): (10, 7)
    }
    assert plan("--topic", "events:1", "--to-datetime", "2999-01-01T00:00:00") == {
        ("events", 1): (10, 10)
    }
    assert plan("--topic", "other", "--by-duration", "P1D") == {("other", 0): (4, 0)}
    # Only "other" holds records from the last hour; "events" (1970) goes to its end.
    assert plan("--all-topics", "--by-duration", "PT1H") == {
        **{("events", p): (10, 10) for p in range(3)},
        ("other", 0): (4, 0),
    }
    assert plan("--topic", "events:0", "--topic", "other", "--to-latest") == {
        ("events", 0): (10, 10),
        ("other", 0): (4, 4),
    }

    done = plan("--topic", "events:0,2", "--to-offset", "3", "--execute")
    assert done == {("events", 0): (10, 3), ("events", 2): (10, 3)}
    assert current() == {("events", 0): 3, ("events", 1): 10, ("events", 2): 3, ("other", 0): 4}
    replay = headrace(
        capsys,
        "consume",
        "events",
        "--group",
        "etl",
        "--max-messages",
        "14",
        "--timeout-ms",
        "15000",
        *bs,
    ).out.split()
    assert sorted(replay) == sorted(f"e{p}-{i}" for p in (0, 2) for i in range(3, 10))


def test_reset_offsets_refuses_what_it_should(
    capsys: pytest.CaptureFixture[str], bs: list[str]
) -> None:
    headrace(capsys, "topics", "create", "known", "--partitions", "2", *bs)

    def refused(*flags: str, text: str, code: int = 2) -> None:
        done = headrace(capsys, "groups", "reset-offsets", "g", *flags, *bs, check=False)
        assert done.code == code, done.err
        assert text in done.err, done.err

    refused("--topic", "unknown-topic", "--to-earliest", text="'unknown-topic' does not exist")
    assert "unknown-topic" not in headrace(capsys, "topics", "list", *bs).out  # not created
    refused("--topic", "known:5", "--to-earliest", text="has no partition 5")
    refused("--topic", "known", text="one of the arguments --to-earliest")
    refused("--topic", "known", "--to-earliest", "--to-latest", text="not allowed with")
    refused("--to-earliest", text="one of the arguments --topic --all-topics")
    refused("--all-topics", "--to-earliest", text="no committed offsets")
    refused("--topic", "known", "--by-duration", "1 hour", text="ISO-8601 duration")
    refused("--topic", "known", "--to-datetime", "yesterday", text="ISO-8601 time")
    refused("--topic", "known:", "--to-earliest", text="no partitions after ':'")


def test_a_group_with_members_is_not_reset_or_deleted(
    capsys: pytest.CaptureFixture[str], broker_process: BrokerProcess, bs: list[str]
) -> None:
    headrace(capsys, "topics", "create", "alerts", "--partitions", "2", *bs)
    member = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headrace",
            "consume",
            "alerts",
            "--group",
            "pager",
            "--timeout-ms",
            "60000",
            *bs,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while "State: Stable" not in (
            out := headrace(capsys, "groups", "describe", "pager", *bs, check=False).out
        ):
            assert time.monotonic() < deadline, out
            time.sleep(0.3)
        rows = table(out, "TOPIC")
        assert sorted(int(r[1]) for r in rows) == [0, 1]
        assert {r[7] for r in rows} != {"-"}  # the owner's client id
        assert {r[6] for r in rows} == {"/127.0.0.1"}  # the owner's address, as Kafka shows it
        assert "Members: 1" in out
        _list_by_state(capsys, bs)
        data = json.loads(headrace(capsys, "groups", "describe", "pager", "-o", "json", *bs).out)
        [owner] = data["members"]
        assert sorted(a["partition"] for a in owner["assignment"]) == [0, 1]
        assert {o["member_id"] for o in data["offsets"]} == {owner["member_id"]}
        for execute in ((), ("--execute",)):
            headrace(
                capsys,
                "groups",
                "reset-offsets",
                "pager",
                "--topic",
                "alerts",
                "--to-earliest",
                *execute,
                *bs,
                check=False,
            ).one_line_error("only while it is empty")
        headrace(capsys, "groups", "delete", "pager", *bs, check=False).one_line_error(
            "has active members"
        )
    finally:
        member.send_signal(signal.SIGINT)  # a clean stop: the consumer leaves the group
        try:
            member.wait(30)
        except subprocess.TimeoutExpired:
            member.kill()  # never leave a process behind, then fail
            member.wait()
            raise
    deadline = time.monotonic() + 15
    while "State: Empty" not in headrace(capsys, "groups", "describe", "pager", *bs).out:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert headrace(capsys, "groups", "delete", "pager", *bs).code == 0


def _list_by_state(capsys: pytest.CaptureFixture[str], bs: list[str]) -> None:
    """``groups list --state`` as kafka-consumer-groups --list --state: states in any case,
    comma-separated; while "pager" is Stable and "ledger" Empty."""
    headrace(capsys, "produce", "alerts", *bs, stdin="one\n")
    headrace(
        capsys, "consume", "alerts", "--group", "ledger", "--from-beginning", "--max-messages", "1",
        *bs,
    )  # fmt: skip

    def listed(*state: str) -> set[str]:
        rows = table(headrace(capsys, "groups", "list", *state, *bs).out, "GROUP")
        return {row[0] for row in rows if row[0] in ("pager", "ledger")}

    assert listed() == listed("--state") == {"pager", "ledger"}
    assert listed("--state", "stable") == {"pager"}
    assert listed("--state", "EMPTY") == {"ledger"}
    assert listed("--state", "Empty,Stable") == {"pager", "ledger"}
    assert listed("--state", "dead") == set()
    as_json = json.loads(
        headrace(capsys, "groups", "list", "--state", "Stable", "-o", "json", *bs).out
    )
    assert {g["group"] for g in as_json} >= {"pager"} and "ledger" not in {
        g["group"] for g in as_json
    }
    bad = headrace(capsys, "groups", "list", "--state", "stabel", *bs, check=False)
    assert bad.code == 2
    assert "invalid state list 'stabel'; valid states are" in bad.err
    assert bad.err.startswith("usage: headrace groups list")


def test_unreachable_broker_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    done = headrace(
        capsys, "groups", "list", "--bootstrap-servers", f"127.0.0.1:{free_port()}", check=False
    )
    done.one_line_error("cannot reach a broker")
