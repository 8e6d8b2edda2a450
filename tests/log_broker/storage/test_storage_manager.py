from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from storage_batches import all_records, batch

from headrace.log_broker.storage import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidTopicError,
    LogManager,
    TopicExistsError,
    UnknownTopicError,
    validate_new_topic,
)


def test_create_topic_makes_partition_logs(tmp_path: Path) -> None:
    manager = LogManager.open(tmp_path)
    topic = manager.create_topic("orders", 3, {"retention.ms": "1000"})
    assert topic.name == "orders" and isinstance(topic.topic_id, uuid.UUID)
    assert [log.partition for log in topic.partitions] == [0, 1, 2]
    assert topic.config.retention_ms == 1000 and topic.overrides == {"retention.ms": "1000"}
    assert manager.get_log("orders", 2) is topic.partitions[2]
    assert manager.get_log("orders", 3) is None and manager.get_log("nope", 0) is None
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir() and "-" in p.name) == [
        "orders-0",
        "orders-1",
        "orders-2",
    ]
    assert set(manager.topics()) == {"orders"}
    manager.close()


def test_default_partition_count(tmp_path: Path) -> None:
    manager = LogManager.open(tmp_path, num_partitions_default=4)
    assert len(manager.create_topic("a").partitions) == 4
    assert len(manager.create_topic("b", -1, {}).partitions) == 4
    manager.close()


def test_topics_data_and_configs_survive_reopen(tmp_path: Path) -> None:
    manager = LogManager.open(tmp_path)
    topic = manager.create_topic("events", 2, {"cleanup.policy": "compact"})
    topic.partitions[1].append(batch(5), now_ms=0)
    manager.close()

    reopened = LogManager.open(tmp_path)
    again = reopened.topics()["events"]
    assert again.topic_id == topic.topic_id
    assert again.overrides == {"cleanup.policy": "compact"} and again.config.compact
    assert again.partitions[1].log_end_offset == 5
    assert [r.offset for r in all_records(again.partitions[1])] == list(range(5))
    reopened.close()


@pytest.mark.parametrize(
    "name", ["", ".", "..", "a" * 250, "with space", "slash/name", "ünïcode", "star*"]
)
def test_invalid_topic_names(tmp_path: Path, name: str) -> None:
    manager = LogManager.open(tmp_path)
    with pytest.raises(InvalidTopicError):
        manager.create_topic(name, 1, {})
    assert not manager.topics()
    manager.close()


def test_longest_legal_name_and_all_legal_characters(tmp_path: Path) -> None:
    manager = LogManager.open(tmp_path)
    manager.create_topic("a" * 249, 1, {})
    manager.create_topic("Az09._-...", 1, {})
    manager.close()
    assert set(LogManager.open(tmp_path).topics()) == {"a" * 249, "Az09._-..."}


def test_existing_partitions_and_configs_are_checked(tmp_path: Path) -> None:
    manager = LogManager.open(tmp_path)
    manager.create_topic("t", 1, {})
    with pytest.raises(TopicExistsError):
        manager.create_topic("t", 1, {})
    with pytest.raises(InvalidPartitionsError):
        manager.create_topic("u", 0, {})
    with pytest.raises(InvalidConfigError, match="bogus"):
        manager.create_topic("u", 1, {"bogus": "1"})
    assert set(manager.topics()) == {"t"}
    assert not (tmp_path / "u-0").exists()
    with pytest.raises(TopicExistsError):
        validate_new_topic("t", 1, {}, existing=manager.topics())
    assert (
        validate_new_topic("v", 2, {"retention.ms": "5"}, existing=manager.topics()).retention_ms
        == 5
    )
    assert "v" not in manager.topics()
    manager.close()


def test_delete_topic_removes_its_files_for_good(tmp_path: Path) -> None:
    manager = LogManager.open(tmp_path)
    topic = manager.create_topic("gone", 2, {})
    topic.partitions[0].append(batch(3), now_ms=0)
    manager.create_topic("kept", 1, {})
    manager.delete_topic("gone")
    assert set(manager.topics()) == {"kept"}
    assert not (tmp_path / "gone-0").exists() and not (tmp_path / "gone-1").exists()
    with pytest.raises(UnknownTopicError):
        manager.delete_topic("gone")
    manager.close()
    assert set(LogManager.open(tmp_path).topics()) == {"kept"}


def test_partition_directories_without_a_topic_are_removed_on_open(tmp_path: Path) -> None:
    manager = LogManager.open(tmp_path)
    manager.create_topic("t", 1, {})
    manager.close()
    (tmp_path / "half-deleted-0").mkdir()
    (tmp_path / "half-deleted-0" / f"{0:020d}.log").write_bytes(b"")
    # transaction state the broker keeps beside a log goes with it
    (tmp_path / "half-deleted-0" / f"{12:020d}.producer_snapshot").write_bytes(b"")
    (tmp_path / "half-deleted-0" / "aborted.txnindex").write_bytes(b"")
    (tmp_path / "t-5").mkdir()
    (tmp_path / "not-a-partition-dir").mkdir()
    (tmp_path / "someone-elses-7").mkdir()
    (tmp_path / "someone-elses-7" / "notes.txt").write_text("keep me")
    LogManager.open(tmp_path).close()
    assert not (tmp_path / "half-deleted-0").exists() and not (tmp_path / "t-5").exists()
    assert (tmp_path / "not-a-partition-dir").exists() and (tmp_path / "t-0").exists()
    assert (tmp_path / "someone-elses-7" / "notes.txt").exists()


def test_alter_config_replaces_overrides_and_reaches_the_logs(tmp_path: Path) -> None:
    manager = LogManager.open(tmp_path)
    manager.create_topic("t", 2, {"retention.ms": "1000", "segment.ms": "5000"})
    topic = manager.alter_config("t", {"max.message.bytes": "100"})
    assert topic.overrides == {"max.message.bytes": "100"}
    assert topic.config.retention_ms == 604800000  # back to the default
    assert all(log.config.max_message_bytes == 100 for log in topic.partitions)
    with pytest.raises(InvalidConfigError):
        manager.alter_config("t", {"segment.ms": "0"})
    assert manager.topics()["t"].overrides == {"max.message.bytes": "100"}  # unchanged
    with pytest.raises(UnknownTopicError):
        manager.alter_config("missing", {})
    manager.close()
    assert LogManager.open(tmp_path).topics()["t"].config.max_message_bytes == 100


def test_incremental_alter_config(tmp_path: Path) -> None:
    manager = LogManager.open(tmp_path)
    manager.create_topic("t", 1, {"retention.ms": "1000", "segment.ms": "5000"})
    topic = manager.incremental_alter_config("t", {"retention.bytes": "10"}, ["segment.ms"])
    assert topic.overrides == {"retention.ms": "1000", "retention.bytes": "10"}
    with pytest.raises(InvalidConfigError):
        manager.incremental_alter_config("t", {}, ["no.such"])
    manager.close()


def test_add_partitions(tmp_path: Path) -> None:
    manager = LogManager.open(tmp_path)
    manager.create_topic("t", 1, {})
    assert len(manager.add_partitions("t", 3).partitions) == 3
    with pytest.raises(InvalidPartitionsError):
        manager.add_partitions("t", 2)
    manager.close()
    assert len(LogManager.open(tmp_path).topics()["t"].partitions) == 3


def test_run_retention_covers_every_log(tmp_path: Path) -> None:
    manager = LogManager.open(tmp_path, defaults={"retention.bytes": "0"})
    one = len(batch(10))
    for name in ("a", "b"):
        topic = manager.create_topic(name, 1, {"segment.bytes": str(one)})
        for _ in range(3):
            topic.partitions[0].append(batch(10), now_ms=0)
    assert manager.run_retention(0) == 4
    assert all(log.log_start_offset == 20 for log in manager.logs())
    manager.close()


def test_bad_broker_defaults_fail_at_open(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfigError):
        LogManager.open(tmp_path, defaults={"retention.ms": "x"})


def test_internal_topic_is_created_once_and_then_kept_as_it_is(tmp_path: Path) -> None:
    manager = LogManager.open(tmp_path)
    topic = manager.internal_topic("__internal", 3, configs={"segment.bytes": "1048576"})
    assert len(topic.partitions) == 3 and topic.config.compact
    assert topic.overrides == {"cleanup.policy": "compact", "segment.bytes": "1048576"}
    # A later start with other settings finds the topic and leaves it alone.
    assert manager.internal_topic("__internal", 5, cleanup_policy="delete") is topic
    manager.close()

    reopened = LogManager.open(tmp_path)
    again = reopened.internal_topic("__internal", 5)
    assert again.topic_id == topic.topic_id and len(again.partitions) == 3
    assert again.overrides == topic.overrides
    plain = reopened.internal_topic("__plain", 1, cleanup_policy="delete")
    assert plain.overrides == {"cleanup.policy": "delete"} and not plain.config.compact
    reopened.close()
