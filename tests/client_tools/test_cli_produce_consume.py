"""``headrace produce`` and ``headrace consume``: formats, headers, positions, transactions
and outputs, against the built-in broker."""

from __future__ import annotations

import base64
import json
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from brokerproc import BrokerProcess
from clirun import headrace


@pytest.fixture
def bs(broker_process: BrokerProcess) -> list[str]:
    return ["--bootstrap-servers", broker_process.bootstrap]


def _records(
    capsys: pytest.CaptureFixture[str], topic: str, bs: list[str], *flags: str
) -> list[dict[str, Any]]:
    out = headrace(
        capsys,
        "consume",
        topic,
        "--from-beginning",
        "-o",
        "json",
        "--timeout-ms",
        "1500",
        *flags,
        *bs,
    ).out
    return [json.loads(line) for line in out.splitlines()]


def test_formats_headers_timestamp_partition_and_tombstones(
    capsys: pytest.CaptureFixture[str], bs: list[str]
) -> None:
    headrace(capsys, "topics", "create", "typed", "--partitions", "2", *bs)
    raw = base64.b64encode(b"\x00\xff\x10").decode()
    lines = '7|{"n": 1}\n-2|{"n": 2}\n9|GONE\n'
    done = headrace(
        capsys,
        "produce",
        "typed",
        "--key-separator",
        "|",
        "--key-format",
        "long",
        "--value-format",
        "json",
        "--null-marker",
        "GONE",
        "--header",
        "src=cli",
        "--header",
        "v=2",
        "--timestamp",
        "2024-01-02T03:04:05Z",
        "--partition",
        "1",
        *bs,
        stdin=lines,
    )
    assert "produced 3 record(s) to typed" in done.err
    records = _records(capsys, "typed", bs, "--key-format", "long", "--value-format", "json")
    assert [(r["partition"], r["key"], r["value"]) for r in records] == [
        (1, 7, {"n": 1}),
        (1, -2, {"n": 2}),
        (1, 9, None),
    ]
    assert {r["timestamp"] for r in records} == {1704164645000}
    assert records[0]["headers"] == [["src", "cli"], ["v", "2"]]
    # Java's LongSerializer: 8 bytes big-endian, seen raw through base64.
    as_bytes = _records(capsys, "typed", bs, "--key-format", "base64", "--max-messages", "1")
    assert base64.b64decode(as_bytes[0]["key"]) == struct.pack(">q", 7)

    headrace(
        capsys,
        "produce",
        "typed",
        "--value-format",
        "base64",
        "--partition",
        "0",
        *bs,
        stdin=raw + "\n",
    )
    [record] = _records(capsys, "typed", bs, "--partition", "0", "--value-format", "base64")
    assert base64.b64decode(record["value"]) == b"\x00\xff\x10"


def test_bad_input_is_one_line_naming_the_line(
    capsys: pytest.CaptureFixture[str], bs: list[str], tmp_path: Path
) -> None:
    headrace(capsys, "topics", "create", "strict", *bs)
    bad = headrace(
        capsys,
        "produce",
        "strict",
        "--value-format",
        "json",
        *bs,
        stdin='{"ok": 1}\nnot json\n',
        check=False,
    )
    bad.one_line_error("line 2: not valid JSON")
    assert "1 record(s) before it were produced" in bad.err
    assert [r["value"] for r in _records(capsys, "strict", bs)] == ['{"ok": 1}']
    headrace(
        capsys,
        "produce",
        "strict",
        "--key-format",
        "long",
        "--key-separator",
        ":",
        *bs,
        stdin="x:1\n",
        check=False,
    ).one_line_error("line 1: not a 64-bit integer: 'x'")
    headrace(
        capsys, "produce", "strict", "--value-format", "base64", *bs, stdin="!!\n", check=False
    ).one_line_error("line 1: not base64")
    usage = headrace(capsys, "produce", "strict", "--value-format", "windowed", *bs, check=False)
    assert usage.code == 2  # decode-only formats are not choices of produce
    source = tmp_path / "lines.txt"
    source.write_text("from-a-file\r\nsecond\n")
    headrace(capsys, "produce", "strict", "--file", str(source), *bs)
    assert [r["value"] for r in _records(capsys, "strict", bs)][-2:] == ["from-a-file", "second"]
    headrace(
        capsys, "produce", "strict", "--file", str(tmp_path / "nope"), *bs, check=False
    ).one_line_error("No such file")


def test_transactions_and_isolation_levels(
    capsys: pytest.CaptureFixture[str], bs: list[str]
) -> None:
    headrace(capsys, "topics", "create", "ledger", *bs)
    headrace(capsys, "produce", "ledger", "--transactional-id", "loader", *bs, stdin="a\nb\nc\n")
    # One bad line aborts the whole transaction: read_committed sees none of it.
    aborted = headrace(
        capsys,
        "produce",
        "ledger",
        "--transactional-id",
        "loader",
        "--value-format",
        "json",
        *bs,
        stdin='"d"\n"e"\nf\n',
        check=False,
    )
    aborted.one_line_error("line 3: not valid JSON")
    assert "nothing was committed" in aborted.err
    committed = [r["value"] for r in _records(capsys, "ledger", bs)]
    assert committed == ["a", "b", "c"]
    everything = [
        r["value"] for r in _records(capsys, "ledger", bs, "--isolation-level", "read_uncommitted")
    ]
    assert everything == ["a", "b", "c", '"d"', '"e"']
    headrace(
        capsys, "produce", "ledger", "--transactional-id", "t", "--acks", "1", *bs, check=False
    ).one_line_error("needs --acks all", code=2)


def test_positions_partitions_and_time(capsys: pytest.CaptureFixture[str], bs: list[str]) -> None:
    headrace(capsys, "topics", "create", "clicks", "--partitions", "3", *bs)
    for partition in range(3):
        lines = "".join(f"p{partition}-{i}\n" for i in range(5))
        headrace(
            capsys,
            "produce",
            "clicks",
            "--partition",
            str(partition),
            "--timestamp",
            str(1_000_000 + partition * 100),
            *bs,
            stdin=lines,
        )
    later = int(time.time() * 1000)
    headrace(capsys, "produce", "clicks", "--partition", "2", *bs, stdin="p2-late\n")

    def values(count: int, *flags: str) -> list[str]:
        # Stops at ``count`` records; the time-out only bounds a failure.
        out = headrace(
            capsys,
            "consume",
            "clicks",
            "--max-messages",
            str(count),
            "--timeout-ms",
            "10000",
            *flags,
            *bs,
        ).out
        return out.splitlines()

    assert values(2, "--partition", "1", "--offset", "3") == ["p1-3", "p1-4"]
    assert sorted(values(3, "--partition", "0,2", "--partition", "1", "--offset", "-1")) == [
        "p0-4",
        "p1-4",
        "p2-late",
    ]
    assert values(1, "--partition", "2", "--from-time", str(later - 1)) == ["p2-late"]
    assert sorted(values(11, "--from-time", "1970-01-01T00:16:40.050Z")) == sorted(
        [f"p1-{i}" for i in range(5)] + [f"p2-{i}" for i in range(5)] + ["p2-late"]
    )
    assert values(2, "--partition", "0", "--from-beginning") == ["p0-0", "p0-1"]
    # --offset takes kcat's beginning|end|N|-N (and the console consumer's earliest|latest).
    assert values(2, "--partition", "0", "--offset", "beginning") == ["p0-0", "p0-1"]
    assert values(1, "--partition", "1", "--offset", "EARLIEST") == ["p1-0"]
    assert len(values(16, "--offset", "beginning")) == 16
    for end in ("end", "latest"):
        after_end = headrace(
            capsys, "consume", "clicks", "--offset", end, "--timeout-ms", "1000", *bs
        )
        assert after_end.out == ""
    bad = headrace(capsys, "consume", "clicks", "--offset", "start", *bs, check=False)
    assert bad.code == 2 and "expected beginning, end or an offset, got 'start'" in bad.err
    assert bad.err.startswith("usage: headrace consume")
    # --topic as Kafka's console consumer spells it.
    spelt = headrace(
        capsys, "consume", "--topic", "clicks", "--partition", "1", "--offset", "-2",
        "--timeout-ms", "1000", *bs,
    )  # fmt: skip
    assert spelt.out == "p1-3\np1-4\n"
    # Nothing more than asked for, and nothing after the end.
    rest = headrace(
        capsys,
        "consume",
        "clicks",
        "--partition",
        "1",
        "--offset",
        "4",
        "--timeout-ms",
        "1000",
        *bs,
    ).out
    assert rest == "p1-4\n"
    headrace(
        capsys, "consume", "clicks", "--partition", "7", "--timeout-ms", "100", *bs, check=False
    ).one_line_error("has no partition 7", code=2)
    headrace(capsys, "consume", "nowhere", "--timeout-ms", "100", *bs, check=False).one_line_error(
        "topic 'nowhere' does not exist"
    )
    assert "nowhere" not in headrace(capsys, "topics", "list", *bs).out


def test_templates_json_lines_and_the_classic_flags(
    capsys: pytest.CaptureFixture[str], bs: list[str]
) -> None:
    headrace(capsys, "topics", "create", "shown", *bs)
    headrace(
        capsys,
        "produce",
        "shown",
        "--key-separator",
        ":",
        "--header",
        "h=1",
        "--timestamp",
        "1700000000000",
        *bs,
        stdin="k1:v1\nk2:v2\n",
    )
    out = headrace(
        capsys,
        "consume",
        "shown",
        "--from-beginning",
        "--max-messages",
        "2",
        "--format",
        r"%t/%p/%o %k=%v @%T [%h] %K %S 100%%\n",
        *bs,
    ).out
    assert out == (
        "shown/0/0 k1=v1 @1700000000000 [h=1] 2 2 100%\n"
        "shown/0/1 k2=v2 @1700000000000 [h=1] 2 2 100%\n"
    )
    tabbed = headrace(
        capsys,
        "consume",
        "shown",
        "--from-beginning",
        "--max-messages",
        "1",
        "--format",
        r"%k\t%v\n",
        *bs,
    ).out
    assert tabbed == "k1\tv1\n"
    classic = headrace(
        capsys,
        "consume",
        "shown",
        "--from-beginning",
        "--max-messages",
        "2",
        "--print-key",
        "--print-partition",
        "--key-separator",
        " ",
        *bs,
    ).out
    assert classic == "0:0 k1 v1\n0:1 k2 v2\n"
    [first, _] = _records(capsys, "shown", bs)
    assert first == {
        "topic": "shown",
        "partition": 0,
        "offset": 0,
        "timestamp": 1700000000000,
        "key": "k1",
        "value": "v1",
        "headers": [["h", "1"]],
    }
    headrace(
        capsys, "consume", "shown", "--format", "%v", "-o", "json", *bs, check=False
    ).one_line_error("give one", code=2)


def test_windowed_keys_decode(capsys: pytest.CaptureFixture[str], bs: list[str]) -> None:
    headrace(capsys, "topics", "create", "windows", *bs)
    time_key = base64.b64encode(b"/home" + struct.pack(">q", 60_000)).decode()
    session_key = base64.b64encode(b"ada" + struct.pack(">qq", 9_000, 1_000)).decode()
    count = base64.b64encode(struct.pack(">q", 3)).decode()
    headrace(
        capsys,
        "produce",
        "windows",
        "--key-format",
        "base64",
        "--value-format",
        "base64",
        "--key-separator",
        " ",
        *bs,
        stdin=f"{time_key} {count}\n{session_key} {count}\n",
    )
    out = headrace(
        capsys,
        "consume",
        "windows",
        "--from-beginning",
        "--max-messages",
        "1",
        "--key-format",
        "windowed",
        "--value-format",
        "long",
        "--format",
        r"%k %v\n",
        *bs,
    ).out
    assert out == "[/home@60000] 3\n"
    session = json.loads(
        headrace(
            capsys,
            "consume",
            "windows",
            "--offset",
            "1",
            "--max-messages",
            "1",
            "--key-format",
            "session-windowed",
            "-o",
            "json",
            *bs,
        ).out
    )
    assert session["key"] == {"key": "ada", "start": 1_000, "end": 9_000}
    short = headrace(
        capsys,
        "consume",
        "windows",
        "--from-beginning",
        "--key-format",
        "session-windowed",
        "--timeout-ms",
        "1500",
        *bs,
        check=False,
    )
    short.one_line_error("offset 0: key: a session-windowed key is at least 16 bytes")


def test_a_group_commits_only_what_was_printed(
    capsys: pytest.CaptureFixture[str], bs: list[str]
) -> None:
    headrace(capsys, "topics", "create", "jobs", *bs)
    headrace(capsys, "produce", "jobs", *bs, stdin="1\n2\nthree\n4\n")
    failed = headrace(
        capsys,
        "consume",
        "jobs",
        "--group",
        "workers",
        "--from-beginning",
        "--value-format",
        "json",
        "--timeout-ms",
        "3000",
        *bs,
        check=False,
    )
    failed.one_line_error("offset 2: value: not valid JSON")
    assert failed.out == "1\n2\n"
    # The group resumes at the record that failed, not after it.
    again = headrace(
        capsys,
        "consume",
        "jobs",
        "--group",
        "workers",
        "--max-messages",
        "2",
        "--timeout-ms",
        "10000",
        *bs,
    ).out
    assert again == "three\n4\n"


def _first_batch_producer_id(broker_process: BrokerProcess, topic: str) -> int:
    """The producerId of the first record batch in partition 0's log (-1: not idempotent)."""
    segment = broker_process.data_dir / f"{topic}-0" / f"{0:020d}.log"
    # baseOffset 8, batchLength 4, leaderEpoch 4, magic 1, crc 4, attributes 2,
    # lastOffsetDelta 4, baseTimestamp 8, maxTimestamp 8, then producerId 8 bytes
    (producer_id,) = struct.unpack_from(">q", segment.read_bytes(), 43)
    return int(producer_id)


def test_the_producer_is_idempotent_by_default(
    capsys: pytest.CaptureFixture[str], broker_process: BrokerProcess, bs: list[str]
) -> None:
    for topic, flags in (
        ("idem", ()),
        ("plain", ("--no-idempotence",)),
        ("acks-one", ("--acks", "1")),
    ):
        headrace(capsys, "topics", "create", topic, *bs)
        done = headrace(capsys, "produce", topic, *flags, *bs, stdin="x\n")
        assert "warning" not in done.err
    assert _first_batch_producer_id(broker_process, "idem") >= 0
    assert _first_batch_producer_id(broker_process, "plain") == -1
    assert _first_batch_producer_id(broker_process, "acks-one") == -1
