"""A topic dump (``headrace consume``) to a file: ``--until-end`` stops at the ends the
partitions had when it began (the last stable offset under read_committed), and a
terminal's stderr shows its progress while a pipe gets none."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from brokerproc import BrokerProcess
from ptyrun import run_on_terminal, run_piped

TOPIC, PER_PARTITION = "dumped", (180, 120)
OPEN_TXN_TOPIC, COMMITTED = "half-open", 3


@pytest.fixture(scope="module")
def bootstrap(broker_process: BrokerProcess) -> Iterator[str]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    bootstrap = broker_process.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics(
        [NewTopic(TOPIC, len(PER_PARTITION), 1), NewTopic(OPEN_TXN_TOPIC, 1, 1)]
    ).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, count in enumerate(PER_PARTITION):
        for i in range(count):
            producer.produce(TOPIC, value=f"{partition}-{i}", partition=partition)
    for i in range(COMMITTED):
        producer.produce(OPEN_TXN_TOPIC, value=f"committed-{i}")
    assert producer.flush(30) == 0
    # A transaction left open past the committed records: read_committed ends before it.
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": "dump-open-txn"})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce(OPEN_TXN_TOPIC, value="not-yet")
    txn.flush(30)
    yield bootstrap
    txn.abort_transaction(30)


def _dump(bootstrap: str, topic: str, *flags: str) -> list[str]:
    return ["consume", topic, "--bootstrap-servers", bootstrap, "--from-beginning", *flags]


def test_until_end_dump_to_a_file_shows_a_bar_on_the_terminal(
    bootstrap: str, tmp_path: Path
) -> None:
    records = tmp_path / "dump.txt"
    code, shown = run_on_terminal(_dump(bootstrap, TOPIC, "--until-end"), stdout=records)
    assert code == 0, shown
    assert len(records.read_text().splitlines()) == sum(PER_PARTITION)
    total = sum(PER_PARTITION)
    final = shown.rstrip("\r\n").rsplit("\r", 1)[-1]
    assert final.startswith(f"{TOPIC} [{'#' * 30}] {total}/{total} 100%"), repr(shown)


def test_max_messages_bounds_the_bar(bootstrap: str, tmp_path: Path) -> None:
    records = tmp_path / "dump.txt"
    code, shown = run_on_terminal(_dump(bootstrap, TOPIC, "--max-messages", "50"), stdout=records)
    assert code == 0, shown
    assert len(records.read_text().splitlines()) == 50
    assert "50/50 100%" in shown.rstrip("\r\n").rsplit("\r", 1)[-1], repr(shown)


def test_records_on_the_terminal_itself_get_no_bar(bootstrap: str) -> None:
    code, shown = run_on_terminal(_dump(bootstrap, TOPIC, "--until-end"))
    assert code == 0, shown
    assert len(shown.splitlines()) == sum(PER_PARTITION) and "100%" not in shown


def test_piped_dump_is_quiet_and_until_end_stops_before_an_open_transaction(
    bootstrap: str,
) -> None:
    result = run_piped(_dump(bootstrap, OPEN_TXN_TOPIC, "--until-end"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"committed-{i}" for i in range(COMMITTED)]
    assert "\r" not in result.stderr and "%" not in result.stderr, result.stderr
