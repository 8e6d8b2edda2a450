"""``headrace spark export`` into an ``s3://`` table on a real S3 server (S3Proxy,
tests/s3_server.py), through delta-rs; no Spark here.

The command takes no storage options: delta-rs reads the usual AWS variables
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``,
``AWS_ALLOW_HTTP``) from the environment, as a user's shell would set them. What must
hold there as on a local path: every record lands once, with its partition, offset, key,
value and timestamp; a rerun adds nothing and makes no commit; new records are all a
later run copies.
"""

from __future__ import annotations

from pathlib import Path

import deltalake
import pytest
from brokerproc import BrokerProcess
from clirun import headrace
from kafka_clients import Confluent, Got, unique
from s3_server import S3Server

from headrace.spark_bridge import export_topic

Row = tuple[int, int, bytes | None, bytes | None, int | None]


@pytest.fixture(scope="module")
def bootstrap(broker_process: BrokerProcess) -> str:
    return broker_process.bootstrap


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """The server's settings in this process's environment, where delta-rs looks."""
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    return s3_server


def table_rows(s3: S3Server, url: str) -> list[Row]:
    table = deltalake.DeltaTable(url, storage_options=s3.storage_options()).to_pyarrow_table(
        columns=["partition", "offset", "key", "value", "timestamp"]
    )
    stamps = [
        None if t is None else int(t.timestamp() * 1000) for t in table["timestamp"].to_pylist()
    ]
    return sorted(
        zip(
            table["partition"].to_pylist(),
            table["offset"].to_pylist(),
            table["key"].to_pylist(),
            table["value"].to_pylist(),
            stamps,
            strict=True,
        )
    )


def topic_rows(got: list[Got]) -> list[Row]:
    return sorted((g.partition, g.offset, g.key, g.value, g.timestamp) for g in got)


def version(s3: S3Server, url: str) -> int:
    return int(deltalake.DeltaTable(url, storage_options=s3.storage_options()).version())


@pytest.mark.slow  # the first to ask for S3Proxy starts its JVM
def test_export_to_s3_copies_each_record_once_and_a_rerun_adds_nothing(
    bootstrap: str, s3_env: S3Server, capsys: pytest.CaptureFixture[str]
) -> None:
    s3 = s3_env
    client = Confluent()
    topic = unique("s3-export")
    client.create_topic(bootstrap, topic, 3)
    client.produce(bootstrap, topic, [(b"k%d" % i, b"v%d" % i) for i in range(1500)])
    url = s3.table_url()
    export = (
        "spark",
        "export",
        topic,
        "--delta-path",
        url,
        "--bootstrap-servers",
        bootstrap,
        "--commit-records",
        "600",
        "--no-progress",
    )

    first = headrace(capsys, *export)
    assert "1,500 records" in first.out and url in first.out, first.out
    assert table_rows(s3, url) == topic_rows(client.consume(bootstrap, topic, 3, 1500))
    # the table is on the server: its log is objects in the bucket's folder
    name = url.removeprefix(f"s3://{s3.buckets[0]}/")
    log = s3.blobs / s3.buckets[0] / name / "_delta_log"
    assert len(list(log.glob("*.json"))) == version(s3, url) + 1 >= 2

    before = version(s3, url)
    again = headrace(capsys, *export)
    assert "nothing new" in again.out, again.out
    assert version(s3, url) == before

    client.produce(bootstrap, topic, [(b"late", b"v-late-%d" % i) for i in range(40)])
    third = headrace(capsys, *export)
    assert "40 records in 1 commit(s)" in third.out, third.out
    assert version(s3, url) == before + 1
    assert table_rows(s3, url) == topic_rows(client.consume(bootstrap, topic, 3, 1540))


def test_wrong_credentials_are_refused_and_nothing_is_written(
    bootstrap: str,
    s3_env: S3Server,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    client = Confluent()
    topic = unique("s3-denied")
    client.create_topic(bootstrap, topic, 1)
    client.produce(bootstrap, topic, [(b"k", b"v")] * 10)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    url = s3_env.table_url()
    done = headrace(
        capsys,
        "spark",
        "export",
        topic,
        "--delta-path",
        url,
        "--bootstrap-servers",
        bootstrap,
        "--no-progress",
        check=False,
    )
    assert done.code == 1, (done.out, done.err)
    assert "Traceback" not in done.err
    # delta-rs's own words, several lines of them: the export passes them on as they are
    assert "403 Forbidden" in done.err and "SignatureDoesNotMatch" in done.err, done.err
    name = url.removeprefix(f"s3://{s3_env.buckets[0]}/")
    assert not (s3_env.blobs / s3_env.buckets[0] / name).exists()


def test_the_python_api_takes_storage_options_instead_of_the_environment(
    bootstrap: str, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in s3_server.env():  # nothing for delta-rs to find there
        monkeypatch.delenv(name, raising=False)
    client = Confluent()
    topic = unique("s3-options")
    client.create_topic(bootstrap, topic, 2)
    client.produce(bootstrap, topic, [(b"k%d" % i, b"v%d" % i) for i in range(300)])
    url = s3_server.table_url()
    result = export_topic(bootstrap, topic, url, storage_options=s3_server.storage_options())
    assert result.records == 300
    assert table_rows(s3_server, url) == topic_rows(client.consume(bootstrap, topic, 2, 300))
