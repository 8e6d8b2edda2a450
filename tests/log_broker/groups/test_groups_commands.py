"""``headrace groups``: run as a user runs it, against a broker process."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from brokerproc import BrokerProcess


def headrace(*args: str, stdin: str | None = None, check: bool = True
             ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "headrace", *args], input=stdin,
                          capture_output=True, text=True, timeout=60, check=False)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def table(out: str, header: str) -> list[list[str]]:
    """The rows of the table whose header line starts with ``header``."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def committed(out: str) -> dict[int, tuple[str, str, str]]:
    """partition -> (current offset, log end offset, lag) from ``groups describe``."""
    return {int(r[1]): (r[2], r[3], r[4]) for r in table(out, "TOPIC")}


def one_line_error(done: subprocess.CompletedProcess[str], text: str) -> None:
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and done.stderr.strip().count("\n") == 0
    assert text in done.stderr, done.stderr


def test_list_describe_reset_delete(broker_process: BrokerProcess) -> None:
    bs = ["--bootstrap-servers", broker_process.bootstrap]
    headrace("topics", "create", "payments", "--partitions", "3", *bs)
    lines = "".join(f"customer-{i % 5}:payment-{i}\n" for i in range(30))
    headrace("produce", "payments", "--key-separator", ":", *bs, stdin=lines)
    headrace("consume", "payments", "--group", "billing", "--from-beginning",
             "--max-messages", "30", *bs)

    listing = table(headrace("groups", "list", *bs).stdout, "GROUP")
    assert ["billing", "Empty", "0", "consumer"] in listing

    described = headrace("groups", "describe", "billing", *bs).stdout
    assert "State: Empty" in described and "has no active members" in described
    rows = committed(described)
    assert sorted(rows) == [0, 1, 2]
    assert sum(int(current) for current, _, _ in rows.values()) == 30
    assert all(current == end and lag == "0" for current, end, lag in rows.values())
    ends = {p: int(end) for p, (_, end, _) in rows.items()}

    headrace("groups", "reset-offsets", "billing", "--topic", "payments", "--to-earliest", *bs)
    rows = committed(headrace("groups", "describe", "billing", *bs).stdout)
    assert {p: (int(c), int(lag)) for p, (c, _, lag) in rows.items()} == {
        p: (0, end) for p, end in ends.items()}

    headrace("groups", "reset-offsets", "billing", "--topic", "payments", "--to-offset", "4",
             *bs)
    rows = committed(headrace("groups", "describe", "billing", *bs).stdout)
    assert {p: int(c) for p, (c, _, _) in rows.items()} == {
        p: min(4, end) for p, end in ends.items()}

    out = headrace("groups", "reset-offsets", "billing", "--topic", "payments",
                   "--to-datetime", "2999-01-01T00:00:00+00:00", *bs).stdout
    assert {int(r[1]): int(r[2]) for r in table(out, "TOPIC")} == ends
    out = headrace("groups", "reset-offsets", "billing", "--topic", "payments",
                   "--to-datetime", "2000-01-01T00:00:00", *bs).stdout
    assert {int(r[1]): int(r[2]) for r in table(out, "TOPIC")} == {p: 0 for p in ends}

    # The group resumes from where the reset put it: everything again.
    replay = headrace("consume", "payments", "--group", "billing", "--max-messages", "30",
                      "--timeout-ms", "15000", *bs).stdout.split()
    assert sorted(replay) == sorted(f"payment-{i}" for i in range(30))

    assert headrace("groups", "delete", "billing", *bs).stdout.strip() == "deleted group billing"
    assert "billing" not in headrace("groups", "list", *bs).stdout
    one_line_error(headrace("groups", "delete", "billing", *bs, check=False), "does not exist")
    one_line_error(headrace("groups", "describe", "billing", *bs, check=False),
                   "does not exist")


def test_a_group_with_members_is_not_reset_or_deleted(broker_process: BrokerProcess) -> None:
    bs = ["--bootstrap-servers", broker_process.bootstrap]
    headrace("topics", "create", "alerts", "--partitions", "2", *bs)
    member = subprocess.Popen(
        [sys.executable, "-m", "headrace", "consume", "alerts", "--group", "pager",
         "--timeout-ms", "60000", *bs], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while "State: Stable" not in (out := headrace("groups", "describe", "pager", *bs,
                                                      check=False).stdout):
            assert time.monotonic() < deadline, out
            time.sleep(0.3)
        rows = table(out, "TOPIC")
        assert sorted(int(r[1]) for r in rows) == [0, 1]
        assert {r[7] for r in rows} != {"-"}  # the owner's client id
        assert {r[6] for r in rows} == {"/127.0.0.1"}  # the owner's address, as Kafka shows it
        assert "Members: 1" in out
        one_line_error(headrace("groups", "reset-offsets", "pager", "--topic", "alerts",
                                "--to-earliest", *bs, check=False), "only while it is empty")
        one_line_error(headrace("groups", "delete", "pager", *bs, check=False),
                       "has active members")
    finally:
        member.send_signal(signal.SIGINT)  # a clean stop: the consumer leaves the group
        try:
            member.wait(30)
        except subprocess.TimeoutExpired:
            member.kill()  # never leave a process behind, then fail
            member.wait()
            raise
    deadline = time.monotonic() + 15
    while "State: Empty" not in headrace("groups", "describe", "pager", *bs).stdout:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert headrace("groups", "delete", "pager", *bs).returncode == 0


def test_unreachable_broker_is_one_line() -> None:
    from brokerproc import free_port

    done = headrace("groups", "list", "--bootstrap-servers", f"127.0.0.1:{free_port()}",
                    check=False)
    one_line_error(done, "cannot reach a broker")
