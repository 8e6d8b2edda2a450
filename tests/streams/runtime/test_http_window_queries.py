"""Interactive queries over window and session stores, key ranges, and bad requests:
two ``headrace run`` instances on the built-in broker, asked over HTTP with urllib.

Each instance answers the keys of the tasks it runs and names the other instance for the
rest; a range answers from the local tasks and names the instance holding each other
task, so the two answers together are the whole store."""

from __future__ import annotations

import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from httpq import get, http_address, until

from headrace import Serdes, SessionWindows, StreamsBuilder, TimeWindows
from headrace.dsl import Materialized

if TYPE_CHECKING:
    from rtprocs import Cluster, Instance

pytestmark = pytest.mark.slow
# ASCII keys: a key outside ASCII is one the stores' key serde refuses.
S = Serdes.string("ascii")
WINDOWS, SESSIONS, COUNTS = "clicks-per-10s", "click-sessions", "clicks"
SIZE, GAP = 10_000, 5_000


def clicks() -> StreamsBuilder:
    """Run by the instance processes: clicks per user in 10 s tumbling windows, in
    sessions of 5 s inactivity, and in all."""
    prefix = os.environ["RTW_PREFIX"]
    builder = StreamsBuilder()
    grouped = builder.stream(f"{prefix}-clicks", key_serde=S, value_serde=S).group_by_key()
    grouped.windowed_by(TimeWindows.of_size(SIZE)).count(materialized=Materialized.as_(WINDOWS))
    grouped.windowed_by(SessionWindows.with_inactivity_gap(GAP)).count(
        materialized=Materialized.as_(SESSIONS)
    )
    grouped.count(materialized=Materialized.as_(COUNTS))
    return builder


# Clicks (user, timestamp): windows and sessions per user follow from these by hand.
CLICKS = [
    ("alice", 1_000),
    ("alice", 2_000),
    ("alice", 12_000),
    ("alice", 61_000),
    ("bob", 5_000),
    ("bob", 9_000),
    ("bob", 30_000),
    ("carol", 3_000),
    ("dave", 40_000),
    ("dave", 43_000),
    ("dave", 47_000),
    ("erin", 15_000),
    ("frank", 16_000),
    ("grace", 17_000),
    ("heidi", 18_000),
]


def expected_windows(user: str) -> list[dict[str, int]]:
    starts: dict[int, int] = {}
    for u, ts in CLICKS:
        if u == user:
            start = ts - ts % SIZE
            starts[start] = starts.get(start, 0) + 1
    return [{"start": s, "end": s + SIZE, "value": n} for s, n in sorted(starts.items())]


def expected_sessions(user: str) -> list[dict[str, int]]:
    sessions: list[list[int]] = []  # [start, end, count]
    for ts in sorted(ts for u, ts in CLICKS if u == user):
        if sessions and ts - sessions[-1][1] <= GAP:
            sessions[-1][1:] = [ts, sessions[-1][2] + 1]
        else:
            sessions.append([ts, ts, 1])
    return [{"start": s, "end": e, "value": n} for s, e, n in sessions]


USERS = sorted({u for u, _ in CLICKS})


async def _setup(bootstrap: str, prefix: str) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(f"{prefix}-clicks", 2, 1)])
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        # In time order: windows close as stream time passes them (no grace), so a
        # click behind stream time would be dropped as late. Keys go through the
        # client's default partitioner, as the queries assume.
        for user, ts in sorted(CLICKS, key=lambda click: click[1]):
            await producer.send(f"{prefix}-clicks", b"click", key=user.encode(), timestamp_ms=ts)
        await producer.flush()
    finally:
        await producer.stop()


def _start(
    instances: list[Instance], prefix: str, bootstrap: str, tmp: Path, name: str
) -> Instance:
    from rtprocs import Instance

    (tmp / name).mkdir(parents=True, exist_ok=True)
    inst = Instance(
        f"{Path(__file__)}:clicks",
        f"{prefix}-app",
        bootstrap,
        tmp / name / "state",
        name,
        env={"RTW_PREFIX": prefix},
    )
    instances.append(inst.start())
    return inst


def _held(inst: Instance) -> set[str]:
    lines = [line for line in inst.log().splitlines() if line.startswith("[status]")]
    tasks = lines[-1].split("tasks=")[1].split()[0] if lines else "-"
    return set() if tasks == "-" else set(tasks.split(","))


async def _split(a: Instance, b: Instance) -> None:
    """Wait until each instance runs one of the two tasks."""

    async def split() -> Any:
        held = (_held(a), _held(b))
        return True if sorted(map(sorted, held)) == [["0_0"], ["0_1"]] else held

    await until(split, 60)


async def test_windows_sessions_and_ranges_across_two_instances(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    bootstrap, prefix = cluster.bootstrap, "rtw1"
    await _setup(bootstrap, prefix)
    a = _start(instances, prefix, bootstrap, tmp_path, "a")
    b = _start(instances, prefix, bootstrap, tmp_path, "b")
    hosts = [await http_address(a), await http_address(b)]
    await _split(a, b)

    # Every user's windows and sessions: the owner answers them exactly, the other
    # instance names the owner. Both hold some users.
    owners: dict[str, str] = {}
    for user in USERS:

        async def answered(user: str = user) -> Any:
            (sa, ba), (sb, bb) = [await get(h, f"/stores/{WINDOWS}/{user}") for h in hosts]
            if sorted((sa, sb)) != [200, 404]:
                return (ba, bb)
            owner, other = (ba, bb) if sa == 200 else (bb, ba)
            if owner["windows"] != expected_windows(user):
                return owner
            assert (owner["kind"], owner["truncated"], owner["host"]) == (
                "window",
                False,
                hosts[sa != 200],
            )
            assert (other["host"], other["task"]) == (owner["host"], owner["task"]), other
            assert "held by another instance" in other["error"], other
            owners[user] = owner["host"]
            return True

        await until(answered)
        owner = owners[user]
        status, body = await get(owner, f"/stores/{SESSIONS}/{user}")
        assert (status, body["kind"], body["sessions"]) == (
            200,
            "session",
            expected_sessions(user),
        ), body
        other = hosts[1 - hosts.index(owner)]
        status, body = await get(other, f"/stores/{SESSIONS}/{user}")
        assert (status, body["host"]) == (404, owner), body
    assert set(owners.values()) == set(hosts), owners

    alice = owners["alice"]
    # from/to bound window starts, both inclusive, as WindowStore.fetch(key, from, to).
    status, body = await get(alice, f"/stores/{WINDOWS}/alice?from=10000&to=60000")
    assert (status, body["windows"]) == (
        200,
        [
            {"start": 10_000, "end": 20_000, "value": 1},
            {"start": 60_000, "end": 70_000, "value": 1},
        ],
    ), body
    status, body = await get(alice, f"/stores/{WINDOWS}/alice?from=10001&to=59999")
    assert (status, body["windows"], body["truncated"]) == (200, [], False), body
    # limit cuts the list and says so.
    status, body = await get(alice, f"/stores/{WINDOWS}/alice?limit=2")
    assert (status, body["windows"], body["truncated"], body["limit"]) == (
        200,
        expected_windows("alice")[:2],
        True,
        2,
    ), body
    # Sessions overlapping [from, to], as SessionStore.findSessions(key, from, to): the
    # session [1000, 2000] overlaps [1500, 1600] though it starts before it.
    status, body = await get(alice, f"/stores/{SESSIONS}/alice?from=1500&to=1600")
    assert (status, body["sessions"]) == (200, [{"start": 1_000, "end": 2_000, "value": 2}]), body
    status, body = await get(alice, f"/stores/{SESSIONS}/alice?from=2001&to=11999")
    assert (status, body["sessions"]) == (200, []), body
    status, body = await get(alice, f"/stores/{SESSIONS}/alice?from=2000&to=12000")
    assert (status, body["sessions"]) == (200, expected_sessions("alice")[:2]), body

    # A user with no clicks at all: an empty list from the instance owning the key.
    async def nobody() -> Any:
        answers = [await get(h, f"/stores/{WINDOWS}/nobody") for h in hosts]
        return (
            True
            if sorted(s for s, _ in answers) == [200, 404]
            and [b["windows"] for s, b in answers if s == 200] == [[]]
            else answers
        )

    await until(nobody)

    # Ranges: each instance answers its own tasks and names the other for the rest;
    # together the answers are the whole store, in key order within each answer.
    all_windows = [{"key": u, **w} for u in USERS for w in expected_windows(u)]
    ranges = {}
    for host in hosts:
        status, body = await get(host, f"/stores/{WINDOWS}?limit=1000")
        assert (status, body["kind"], body["truncated"]) == (200, "window", False), body
        other = hosts[1 - hosts.index(host)]
        assert len(body["tasks"]) == 1 and list(body["unanswered"].values()) == [other], body
        assert body["entries"] == sorted(body["entries"], key=lambda e: (e["key"], e["start"]))
        ranges[host] = body["entries"]
    assert (
        sorted(ranges[hosts[0]] + ranges[hosts[1]], key=lambda e: (e["key"], e["start"]))
        == all_windows
    )
    for host in hosts:  # the entries of one instance are the windows of the users it owns
        assert {e["key"] for e in ranges[host]} == {u for u, h in owners.items() if h == host}

    # Key and time bounds together, and limit over a range.
    status, body = await get(
        alice, f"/stores/{WINDOWS}?from_key=alice&to_key=alice&from=0&to=10000"
    )
    assert (status, body["entries"]) == (
        200,
        [{"key": "alice", **w} for w in expected_windows("alice")[:2]],
    ), body
    status, body = await get(alice, f"/stores/{WINDOWS}?limit=1")
    assert (status, len(body["entries"]), body["truncated"]) == (200, 1, True), body
    all_sessions: list[dict[str, Any]] = [
        {"key": u, **s} for u in USERS for s in expected_sessions(u)
    ]
    got_sessions = []
    for host in hosts:
        status, body = await get(host, f"/stores/{SESSIONS}?from_key=a&to_key=e")
        assert (status, body["kind"]) == (200, "session"), body
        got_sessions += body["entries"]
    assert sorted(got_sessions, key=lambda e: (e["key"], e["start"])) == [
        s for s in all_sessions if "a" <= s["key"] <= "e"
    ]
    counts = {}
    for host in hosts:
        status, body = await get(host, f"/stores/{COUNTS}?from_key=b&to_key=dave")
        assert (status, body["kind"]) == (200, "key_value"), body
        counts.update({e["key"]: e["value"] for e in body["entries"]})
    assert counts == {"bob": 3, "carol": 1, "dave": 3}

    # Bad requests: a 4xx with a message, never a 500.
    quoted = urllib.parse.quote
    bad = [
        ("/stores/no-such-store/alice", 404, "no store"),
        ("/stores/no-such-store", 404, "no store"),
        (f"/stores/{WINDOWS}/alice?from=yesterday", 400, "epoch milliseconds"),
        (f"/stores/{WINDOWS}/alice?from=-5", 400, "between 0"),
        (f"/stores/{WINDOWS}/alice?from=20&to=10", 400, "after 'to'"),
        (f"/stores/{SESSIONS}/alice?to=1e3", 400, "epoch milliseconds"),
        (f"/stores/{WINDOWS}/alice?limit=0", 400, "'limit' must be between 1 and 10000"),
        (f"/stores/{WINDOWS}?limit=10001", 400, "'limit' must be between 1 and 10000"),
        (f"/stores/{WINDOWS}?limit=many", 400, "'limit' must be an integer"),
        (f"/stores/{WINDOWS}/alice?form=1", 400, "unknown query parameter 'form'"),
        (f"/stores/{COUNTS}/alice?from=1", 400, "unknown query parameter 'from'"),
        (f"/stores/{COUNTS}?from=1", 400, "unknown query parameter 'from'"),
        (f"/stores/{COUNTS}?from_key=d&to_key=b", 400, "sorts after"),
        (f"/stores/{WINDOWS}?limit=1&limit=2", 400, "given twice"),
        (f"/stores/{WINDOWS}/{quoted('zoë')}", 400, "key serde refused"),
        (f"/stores/{COUNTS}/{quoted('zoë')}", 400, "key serde refused"),
        (f"/stores/{SESSIONS}?from_key=a&to_key={quoted('zoë')}", 400, "key serde refused"),
        (f"/stores/{WINDOWS}/alice/extra", 400, "use /stores"),
        ("/stores?limit=1", 400, "unknown query parameter"),
    ]
    for path, want, text in bad:
        status, body = await get(hosts[0], path)
        assert status == want and text in body["error"], (path, status, body)
    assert a.stop() == 0 and b.stop() == 0
