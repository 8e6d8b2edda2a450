"""DescribeLogDirs as a third-party admin client (kafka-python's, as kafka-log-dirs.sh
uses it) sees it: the broker's data directory, and each partition's bytes on disk."""

from __future__ import annotations

from brokerproc import BrokerProcess


def test_kafka_python_describes_log_dirs(broker_process: BrokerProcess) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=broker_process.bootstrap)
    try:
        admin.create_topics([NewTopic("sized", 2, 1)])
        producer = KafkaProducer(bootstrap_servers=broker_process.bootstrap)
        for _ in range(20):
            producer.send("sized", b"x" * 1000, partition=0)
        producer.flush()
        producer.close()
        [broker] = admin.describe_log_dirs()
    finally:
        admin.close()
    [log_dir] = broker["log_dirs"]
    assert log_dir["error_code"] == 0
    assert log_dir["log_dir"] == str(broker_process.data_dir.resolve())
    assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
    sizes = {
        p["partition_index"]: p["partition_size"]
        for t in log_dir["topics"]
        if t["name"] == "sized"
        for p in t["partitions"]
    }
    assert sizes[0] >= 20 * 1000 and sizes[1] == 0
