"""fetch.response.max.memory.bytes bounds what fetch responses in flight hold, broker-wide.

Found: 16 concurrent fetches of large partitions took the broker from 52 to 1,785 MiB
resident, and 8 clients that never read their answers kept 915 MiB pinned. The broker
runs as a process here, so its resident size (from /proc) is what is measured.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

from brokerproc import BrokerProcess
from fetch_load import (
    MIB,
    Progress,
    batch,
    fetch_once,
    fetch_request,
    load,
    peak_rss_mib,
    reset_peak_rss,
    rss_mib,
)

BUDGET = 128 * MIB
# Beyond the budget: per connection a slice of an answer in the transport and read
# buffers, and what the allocator keeps; small beside what was measured without it.
SLACK_MIB = 64
# What may stay resident once every answer is gone: the allocator's leftovers.
RELEASED_SLACK_MIB = 24
PARTITIONS = 8


def _broker(tmp_path: Path) -> BrokerProcess:
    return BrokerProcess(
        tmp_path / "data",
        "--fsync",
        "never",
        "--num-partitions",
        str(PARTITIONS),
        "--fetch-response-max-memory-bytes",
        str(BUDGET),
    )


def _connect(broker: BrokerProcess) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=120)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 256 * 1024)
    return sock


def test_sixteen_clients_fetching_large_partitions_stay_within_the_budget(
    tmp_path: Path,
) -> None:
    with _broker(tmp_path) as broker:
        assert broker.proc is not None
        pid = broker.proc.pid
        ends = load(broker.bootstrap, PARTITIONS, 32 * MIB)
        size_each = ends[0] // 8 * len(batch())
        baseline = rss_mib(pid)
        reset_peak_rss(pid)
        progresses = [Progress(dict.fromkeys(ends, 0)) for _ in range(16)]
        failures: list[BaseException] = []

        def client(progress: Progress) -> None:
            try:
                with _connect(broker) as sock:
                    deadline = time.monotonic() + 240
                    while progress.offsets != ends and time.monotonic() < deadline:
                        fetch_once(sock, progress, 64 * MIB)
            except BaseException as exc:  # reported below, with the others
                failures.append(exc)

        threads = [threading.Thread(target=client, args=(p,)) for p in progresses]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        peak = peak_rss_mib(pid)
        print(f"baseline {baseline:.0f} MiB, peak {peak:.0f} MiB")
        assert not failures, failures
        for progress in progresses:  # nothing lost, nobody starved
            assert progress.offsets == ends
            assert progress.bytes_by_partition == dict.fromkeys(ends, size_each)
        assert peak - baseline <= BUDGET / MIB + SLACK_MIB, (baseline, peak)


def test_clients_that_never_read_hold_one_answer_each_and_others_are_served(
    tmp_path: Path,
) -> None:
    answer_bytes = 8 * MIB
    with _broker(tmp_path) as broker:
        assert broker.proc is not None
        pid = broker.proc.pid
        ends = load(broker.bootstrap, PARTITIONS, 16 * MIB)
        baseline = rss_mib(pid)
        reset_peak_rss(pid)
        stuck = [_connect(broker) for _ in range(8)]
        try:
            request = fetch_request(dict.fromkeys(ends, 0), answer_bytes, max_wait_ms=100)
            for sock in stuck:
                sock.setblocking(False)
                try:  # as many fetches as the socket takes without anyone reading
                    for _ in range(16):
                        sock.send(request)
                except BlockingIOError:
                    pass
            time.sleep(3)  # the broker has read and answered what it was going to
            pinned = rss_mib(pid)

            # Another client is served at once, with data, fetch after fetch.
            progress = Progress(dict.fromkeys(ends, 0))
            with _connect(broker) as sock:
                for _ in range(10):
                    started = time.monotonic()
                    fetch_once(sock, progress, 4 * MIB)
                    assert time.monotonic() - started < 2
            assert progress.empty_answers == 0
            assert sum(progress.bytes_by_partition.values()) >= 10 * 3 * MIB
            held = max(pinned, rss_mib(pid))
        finally:
            for sock in stuck:
                sock.close()
        peak = peak_rss_mib(pid)
        # One answer held per client that does not read, within the budget.
        bound = min(BUDGET, 8 * answer_bytes) / MIB + SLACK_MIB
        print(f"baseline {baseline:.0f}, held {held:.0f}, peak {peak:.0f} MiB")
        assert held - baseline <= bound, (baseline, held)
        assert peak - baseline <= BUDGET / MIB + SLACK_MIB, (baseline, peak)
        # Their memory is released once they have gone.
        deadline = time.monotonic() + 15
        while rss_mib(pid) - baseline > RELEASED_SLACK_MIB and time.monotonic() < deadline:
            time.sleep(0.2)
        after = rss_mib(pid)
        print(f"after they closed {after:.0f} MiB")
        assert after - baseline <= RELEASED_SLACK_MIB, (baseline, after)
