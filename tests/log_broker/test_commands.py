"""The broker-side commands, run as a user runs them."""

from __future__ import annotations

import subprocess
import sys

from brokerproc import BrokerProcess, free_port


def headrace(*args: str, stdin: str | None = None, check: bool = True
             ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "headrace", *args], input=stdin,
                          capture_output=True, text=True, timeout=60, check=False)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def test_topics_produce_consume(broker_process: BrokerProcess) -> None:
    bs = ["--bootstrap-servers", broker_process.bootstrap]
    out = headrace("topics", "create", "orders", "--partitions", "3",
                   "--config", "retention.ms=3600000", *bs).stdout
    assert "created topic orders with 3 partition(s)" in out

    listing = headrace("topics", "list", *bs).stdout.splitlines()
    assert listing[0].split() == ["TOPIC", "PARTITIONS"]
    assert ["orders", "3"] in [line.split() for line in listing]

    lines = "".join(f"customer-{i % 4}:order-{i}\n" for i in range(30))
    produced = headrace("produce", "orders", "--key-separator", ":", *bs, stdin=lines)
    assert "produced 30 record(s)" in produced.stderr

    consumed = headrace("consume", "orders", "--from-beginning", "--max-messages", "30",
                        "--print-key", "--print-partition", "--key-separator", " ", *bs)
    rows = [line.split(" ") for line in consumed.stdout.splitlines()]
    assert sorted(value for _po, _key, value in rows) == sorted(f"order-{i}" for i in range(30))
    partition_of_key = {}
    for position, key, _value in rows:
        partition = position.split(":")[0]
        assert partition_of_key.setdefault(key, partition) == partition

    described = headrace("topics", "describe", "orders", *bs).stdout
    assert "Partitions: 3" in described
    assert "retention.ms" in described and "3600000" in described and "override" in described
    assert "cleanup.policy" in described and "default" in described
    records = sum(int(line.split()[3]) for line in described.splitlines()
                  if line[:1].isdigit())
    assert records == 30

    assert "deleted topic orders" in headrace("topics", "delete", "orders", *bs).stdout
    assert "orders" not in headrace("topics", "list", *bs).stdout


def test_errors_are_one_clear_line(broker_process: BrokerProcess) -> None:
    bs = ["--bootstrap-servers", broker_process.bootstrap]
    bad = headrace("topics", "create", "bad/name", *bs, check=False)
    assert bad.returncode == 1
    assert "Traceback" not in bad.stderr
    assert bad.stderr.strip().count("\n") == 0
    assert "cannot create 'bad/name'" in bad.stderr

    missing = headrace("topics", "describe", "no-such-topic", *bs, check=False)
    assert missing.returncode == 1 and "does not exist" in missing.stderr

    nobody = headrace("topics", "list", "--bootstrap-servers", f"127.0.0.1:{free_port()}",
                      check=False)
    assert nobody.returncode == 1
    assert "Traceback" not in nobody.stderr
    assert nobody.stderr.strip().count("\n") == 0
