"""headrace's client tools, schema registry, console and Delta export against three
Apache Kafka 4.4 nodes: they are Kafka clients, so they work on a replicated cluster as
on the built-in broker. What docs/how-to/running-on-apache-kafka.md says works is
checked here; what it says differs (the registry's own topic) is pinned.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import deltalake
import pytest
from apache_kafka import KafkaCluster, partition_states
from brokerproc import free_port
from clirun import Done, headrace
from registryproc import wait_listening

pytestmark = pytest.mark.slow


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:6]}"


def cli(
    capsys: pytest.CaptureFixture[str], cluster: KafkaCluster, *argv: str, stdin: str | None = None
) -> Done:
    return headrace(capsys, *argv, "--bootstrap-servers", cluster.bootstrap, stdin=stdin)


@contextmanager
def serving(*argv: str) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """``headrace <argv> --listen 127.0.0.1:PORT`` as a process, until it listens."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "headrace", *argv, "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_listening(port, proc, timeout=60)
        yield port, proc
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err.decode()[-2000:]


def http(url: str, body: Mapping[str, object] | None = None) -> tuple[int, str]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/vnd.schemaregistry.v1+json"} if data else {}
    request = urllib.request.Request(url, data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.status, answer.read().decode()


def test_topics_produce_consume_groups_on_three_nodes(
    capsys: pytest.CaptureFixture[str], kafka_cluster_3: KafkaCluster
) -> None:
    cluster, topic, group = kafka_cluster_3, unique("orders"), unique("audit")
    created = cli(
        capsys,
        cluster,
        "topics",
        "create",
        topic,
        "--partitions",
        "3",
        "--replication-factor",
        "3",
        "--config",
        "min.insync.replicas=2",
    )
    assert created.out == f"created topic {topic} with 3 partition(s)\n"
    described = json.loads(cli(capsys, cluster, "topics", "describe", topic, "-o", "json").out)
    for p in described["partitions"]:
        assert sorted(p["replicas"]) == [1, 2, 3] and sorted(p["isr"]) == [1, 2, 3], p
    assert {"name": "min.insync.replicas", "value": "2"}.items() <= next(
        c for c in described["configs"] if c["name"] == "min.insync.replicas"
    ).items()
    # the leaders are spread over the nodes, as the cluster placed them
    assert {p["leader"] for p in described["partitions"]} == {
        s.leader for s in partition_states(cluster.bootstrap, [topic]).values()
    }

    lines = "".join(f"customer-{i % 5}:order-{i}\n" for i in range(30))
    produced = cli(capsys, cluster, "produce", topic, "--key-separator", ":", stdin=lines)
    assert "produced 30 record(s)" in produced.err
    consumed = cli(
        capsys,
        cluster,
        "consume",
        topic,
        "--group",
        group,
        "--from-beginning",
        "--max-messages",
        "30",
        "--timeout-ms",
        "30000",
        "-o",
        "json",
    ).out
    records = [json.loads(line) for line in consumed.splitlines()]
    assert sorted(r["value"] for r in records) == sorted(f"order-{i}" for i in range(30))

    assert group in [
        g["group"] for g in json.loads(cli(capsys, cluster, "groups", "list", "-o", "json").out)
    ]
    data = json.loads(cli(capsys, cluster, "groups", "describe", group, "-o", "json").out)
    assert sum(o["current_offset"] for o in data["offsets"]) == 30
    assert all(o["lag"] == 0 for o in data["offsets"]), data

    altered = cli(capsys, cluster, "topics", "alter", topic, "--partitions", "4")
    assert altered.code == 0
    assert len(partition_states(cluster.bootstrap, [topic])) == 4
    assert cli(capsys, cluster, "topics", "delete", topic).out == f"deleted topic {topic}\n"


def test_schema_registry_on_a_replicated_topic(
    capsys: pytest.CaptureFixture[str], kafka_cluster_3: KafkaCluster
) -> None:
    """The registry keeps its schemas in a topic it creates with one replica; made
    beforehand with three, it uses that one, and a restarted registry reads its schemas
    back from it."""
    cluster = kafka_cluster_3
    replicated, own = unique("_schemas-3"), unique("_schemas-own")
    cli(
        capsys,
        cluster,
        "topics",
        "create",
        replicated,
        "--partitions",
        "1",
        "--replication-factor",
        "3",
        "--config",
        "cleanup.policy=compact",
        "--config",
        "min.insync.replicas=2",
    )
    schema = {
        "schema": json.dumps(
            {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
        )
    }
    registry = ("schema-registry", "--bootstrap-servers", cluster.bootstrap)
    with serving(*registry, "--schema-registry-topic", replicated) as (port, _proc):
        status, body = http(f"http://127.0.0.1:{port}/subjects/orders-value/versions", schema)
        assert status == 200 and "id" in json.loads(body)
    with serving(*registry, "--schema-registry-topic", replicated) as (port, _proc):
        _, body = http(f"http://127.0.0.1:{port}/subjects/orders-value/versions/latest")
        assert json.loads(body)["version"] == 1
        assert json.loads(json.loads(body)["schema"])["name"] == "Order"
    assert {
        len(s.replicas) for s in partition_states(cluster.bootstrap, [replicated]).values()
    } == {3}

    with serving(*registry, "--schema-registry-topic", own):
        pass
    # what the registry creates for itself has one replica: the documented caveat
    assert {len(s.replicas) for s in partition_states(cluster.bootstrap, [own]).values()} == {1}


def test_console_pages_on_three_nodes(
    capsys: pytest.CaptureFixture[str], kafka_cluster_3: KafkaCluster
) -> None:
    cluster, topic, group = kafka_cluster_3, unique("console"), unique("console-readers")
    cli(
        capsys, cluster, "topics", "create", topic, "--partitions", "2", "--replication-factor", "3"
    )
    cli(capsys, cluster, "produce", topic, stdin="".join(f"v{i}\n" for i in range(10)))
    cli(
        capsys,
        cluster,
        "consume",
        topic,
        "--group",
        group,
        "--from-beginning",
        "--max-messages",
        "10",
        "--timeout-ms",
        "30000",
    )
    with serving("console", "--bootstrap-servers", cluster.bootstrap) as (port, _proc):
        base = f"http://127.0.0.1:{port}"
        pages = {}
        for path in (
            "/",
            "/brokers",
            *(f"/brokers/{n.node_id}" for n in cluster.nodes),
            "/topics",
            f"/topics/{topic}",
            f"/topics/{topic}/messages",
            "/groups",
            f"/groups/{group}",
            "/transactions",
        ):
            status, body = http(base + path)
            assert status == 200, path
            pages[path] = body
    for node in cluster.nodes:
        assert f"127.0.0.1:{node.port}" in pages["/brokers"], pages["/brokers"][-3000:]
    assert topic in pages["/topics"]
    assert "v9" in pages[f"/topics/{topic}/messages"]
    assert topic in pages[f"/groups/{group}"]


def test_spark_export_to_delta_on_three_nodes(
    capsys: pytest.CaptureFixture[str], kafka_cluster_3: KafkaCluster, tmp_path: Path
) -> None:
    cluster, topic = kafka_cluster_3, unique("export")
    cli(
        capsys, cluster, "topics", "create", topic, "--partitions", "3", "--replication-factor", "3"
    )
    cli(capsys, cluster, "produce", topic, stdin="".join(f"row-{i}\n" for i in range(500)))
    table = tmp_path / "table"
    export = ("spark", "export", "--topic", topic, "--delta-path", str(table), "--no-progress")
    cli(capsys, cluster, *export)
    values = deltalake.DeltaTable(str(table)).to_pyarrow_table(columns=["value"])["value"]
    assert sorted(v.decode() for v in values.to_pylist()) == sorted(f"row-{i}" for i in range(500))
    cli(capsys, cluster, *export)  # a rerun finds nothing new
    assert deltalake.DeltaTable(str(table)).to_pyarrow_table().num_rows == 500
