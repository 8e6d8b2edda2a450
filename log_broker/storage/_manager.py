"""All topics of a broker: creation, deletion, configs, and their partition logs.

Layout of the data directory::

    .topics/<topic id>.json name, partition count and config overrides (named by id:
                            a 249-character topic name leaves no room for a suffix)
    <name>-<partition>/     one PartitionLog per partition

A topic exists exactly when its JSON file does: creation writes it (atomically) before
the partition directories, deletion removes it first, and opening removes partition
directories that belong to no topic (left by a deletion that was cut short).
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import orjson

from headrace.base import fsync_dir, write_atomically

from ._cleaner import Cleaner, CleanUpTo
from ._config import CONFIG_DEFS, TopicConfig
from ._errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidTopicError,
    KafkaStorageError,
    LogClosedError,
    TopicExistsError,
    UnknownTopicError,
)
from ._faults import storage_fault
from ._log import PartitionLog
from ._markers import AbortedIndexOf
from ._synced_checkpoint import SyncedPosition, read_positions, render, write_positions

log = logging.getLogger("headrace.broker.storage")

TOPICS_DIR = ".topics"
STRAY_DIR = "stray-partitions"  # partition directories no topic claimed at start-up
MAX_TOPIC_NAME_LENGTH = 249
MAX_PARTITIONS = 100_000  # far beyond what one broker serves; stops absurd requests
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
_PARTITION_DIR = re.compile(r"(.+)-(\d+)")
# Everything a partition directory may hold: segments and their indexes (and compaction's
# swap files), checkpoints, and the transaction state the broker keeps beside the log
# (producer-state snapshots, the aborted-transaction index).
_LOG_FILE = re.compile(
    r"\d{20}\.(log|index|timeindex)(\.cleaned|\.swap|\.deleted)?|.*\.checkpoint(\.tmp)?"
    r"|\.clean-shutdown|\d{20}\.producer_snapshot(\.tmp)?|aborted\.txnindex"
)


@dataclass(eq=False)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionLog]
    config: TopicConfig
    overrides: dict[str, str]


def validate_topic_name(name: str) -> None:
    """Raise ``InvalidTopicError`` unless Kafka would accept ``name``."""
    if not name:
        raise InvalidTopicError("topic name is empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name {name!r} is not allowed")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"topic name is {len(name)} characters, at most {MAX_TOPIC_NAME_LENGTH} allowed"
        )
    if not _LEGAL_NAME.fullmatch(name):
        raise InvalidTopicError(
            f"topic name {name!r} may contain only ASCII letters, digits, '.', '_' and '-'"
        )


def _check_partitions(count: int) -> None:
    if not 1 <= count <= MAX_PARTITIONS:
        raise InvalidPartitionsError(f"partition count {count} is outside 1..{MAX_PARTITIONS}")


def validate_new_topic(
    name: str,
    num_partitions: int,
    overrides: Mapping[str, str],
    *,
    existing: Mapping[str, Topic],
    defaults: Mapping[str, str] | None = None,
) -> TopicConfig:
    """Every check ``create_topic`` makes, without creating anything (validate_only)."""
    validate_topic_name(name)
    if name in existing:
        raise TopicExistsError(f"topic {name!r} already exists")
    _check_partitions(num_partitions)
    return TopicConfig.from_overrides(overrides, defaults)


class LogManager:
    """Owns every topic and partition log under one data directory."""

    def __init__(
        self,
        data_dir: Path,
        num_partitions_default: int,
        defaults: Mapping[str, str],
        max_partitions: int | None = None,
    ) -> None:
        self.data_dir = data_dir
        # Partitions in all topics together (max.broker.partitions); None: no limit.
        self.max_partitions = max_partitions
        self.num_partitions_default = num_partitions_default
        self._defaults = dict(defaults)
        # Replaced, never changed in place, so the loop can iterate a ``topics()`` while
        # a worker thread publishes a topic.
        self._topics: dict[str, Topic] = {}
        # Topics being created or grown -> partitions they are adding. The lock guards
        # the table, this and the counts; it is never held while partition files are
        # made, so creating thousands of partitions stalls no other topic's work.
        self._changing: dict[str, int] = {}
        self._lock = threading.Lock()
        self._cleaner = Cleaner()
        self._synced_at_open: dict[str, SyncedPosition] = {}
        self._checkpointed = b""  # the recovery positions last written

    @classmethod
    def open(
        cls,
        data_dir: Path,
        *,
        num_partitions_default: int = 1,
        defaults: Mapping[str, str] | None = None,
        max_partitions: int | None = None,
    ) -> LogManager:
        """Open every topic found under ``data_dir``, recovering each partition.

        ``defaults`` are broker-wide topic config values by topic config name
        (e.g. ``{"retention.ms": "3600000"}``); topic overrides win over them.
        """
        data_dir = Path(data_dir)
        (data_dir / TOPICS_DIR).mkdir(parents=True, exist_ok=True)
        manager = cls(data_dir, num_partitions_default, defaults or {}, max_partitions)
        TopicConfig.from_overrides({}, manager._defaults)  # bad broker defaults fail here
        manager._synced_at_open = read_positions(data_dir)
        try:
            for path in sorted((data_dir / TOPICS_DIR).glob("*.json")):
                manager._load_topic(path)
        except BaseException:
            manager.close()
            raise
        manager._remove_orphans()
        return manager

    def _load_topic(self, path: Path) -> None:
        try:
            meta = orjson.loads(path.read_bytes())
            name, count = meta["name"], int(meta["partitions"])
            topic_id = uuid.UUID(meta["topic_id"])
            overrides = {str(k): str(v) for k, v in meta["overrides"].items()}
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise KafkaStorageError(f"unreadable topic metadata {path}: {exc}") from exc
        config = TopicConfig.from_overrides(overrides, self._defaults)
        topic = Topic(name, topic_id, [], config, overrides)
        self._topics[name] = topic
        for partition in range(count):
            directory = f"{name}-{partition}"
            synced = self._synced_at_open.pop(directory, None)
            topic.partitions.append(self._open_log(name, partition, config, synced))

    def _open_log(
        self, name: str, partition: int, config: TopicConfig, synced: SyncedPosition | None = None
    ) -> PartitionLog:
        return PartitionLog.open(
            self.data_dir / f"{name}-{partition}", name, partition, config, synced
        )

    def _remove_orphans(self) -> None:
        """Move partition directories no topic claims into ``stray/``, with an ERROR
        line each: their topic's metadata is missing or names fewer partitions, which
        a crashed delete leaves behind, but so does a lost or damaged metadata file,
        and then the directory holds a live topic's data."""
        for entry in sorted(self.data_dir.iterdir()):
            match = _PARTITION_DIR.fullmatch(entry.name)
            if not entry.is_dir() or match is None:
                continue
            topic = self._topics.get(match[1])
            if (topic is None or int(match[2]) >= len(topic.partitions)) and _holds_only_log_files(
                entry
            ):
                self._set_aside(
                    entry,
                    "no topic metadata"
                    if topic is None
                    else f"topic {topic.name!r} has {len(topic.partitions)} partitions",
                )

    def _set_aside(self, directory: Path, why: str) -> None:
        stray = self.data_dir / STRAY_DIR
        stray.mkdir(exist_ok=True)
        target = stray / directory.name
        suffix = 1
        while target.exists():
            target, suffix = stray / f"{directory.name}.{suffix}", suffix + 1
        size = sum(f.stat().st_size for f in directory.iterdir() if f.is_file())
        log.error(
            "partition directory %s (%d bytes) belongs to no topic (%s); moved to %s",
            directory,
            size,
            why,
            target,
        )
        directory.replace(target)
        fsync_dir(self.data_dir)

    def _write_meta(self, topic: Topic, partitions: int | None = None) -> None:
        meta = {
            "version": 1,
            "name": topic.name,
            "topic_id": str(topic.topic_id),
            "partitions": len(topic.partitions) if partitions is None else partitions,
            "overrides": topic.overrides,
        }
        write_atomically(self._meta_path(topic), orjson.dumps(meta, option=orjson.OPT_INDENT_2))

    def _meta_path(self, topic: Topic) -> Path:
        return self.data_dir / TOPICS_DIR / f"{topic.topic_id}.json"

    # ------------------------------------------------------------------ topics

    def topics(self) -> Mapping[str, Topic]:
        """A read-only live view of the topics by name."""
        return MappingProxyType(self._topics)

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        found = self._topics.get(topic)
        if found is None or not 0 <= partition < len(found.partitions):
            return None
        return found.partitions[partition]

    def _topic(self, name: str) -> Topic:
        topic = self._topics.get(name)
        if topic is None:
            raise UnknownTopicError(f"topic {name!r} does not exist")
        return topic

    def create_topic(
        self,
        name: str,
        num_partitions: int | None = None,
        overrides: Mapping[str, str] | None = None,
    ) -> Topic:
        """Create a topic with ``num_partitions`` (None or -1: the broker default).

        Steps: validate name, count and configs; write the topic's metadata file; then
        create and open each partition's log.
        """
        if num_partitions is None or num_partitions == -1:
            num_partitions = self.num_partitions_default
        overrides = dict(overrides or {})
        with self._lock:
            if name in self._changing:
                raise TopicExistsError(f"topic {name!r} is being created")
            config = validate_new_topic(
                name, num_partitions, overrides, existing=self._topics, defaults=self._defaults
            )
            self._check_total(num_partitions)
            self._changing[name] = num_partitions
        try:
            topic = Topic(name, uuid.uuid4(), [], config, overrides)
            self._write_meta(topic, num_partitions)
            try:
                for partition in range(num_partitions):
                    topic.partitions.append(self._open_log(name, partition, config))
            except BaseException:
                for log in topic.partitions:
                    log.delete()
                self._meta_path(topic).unlink(missing_ok=True)
                raise
            with self._lock:
                self._topics = {**self._topics, name: topic}
            return topic
        except OSError as exc:  # a full or failing disk: KAFKA_STORAGE_ERROR, logged once
            raise storage_fault(exc, f"create topic {name!r} in", self.data_dir) from exc
        finally:
            with self._lock:
                del self._changing[name]

    def internal_topic(
        self,
        name: str,
        num_partitions: int,
        *,
        cleanup_policy: str = "compact",
        configs: Mapping[str, str] | None = None,
    ) -> Topic:
        """The broker's own topic ``name`` (``__consumer_offsets`` and the like), created
        at start-up with ``num_partitions``, ``cleanup.policy`` and ``configs`` when it
        is missing. An existing one is returned as it is: its partition count decides
        where keys hash to, so a later change of the setting must not reshape it."""
        topic = self._topics.get(name)
        if topic is not None:
            return topic
        return self.create_topic(
            name, num_partitions, {"cleanup.policy": cleanup_policy, **(configs or {})}
        )

    def _check_total(self, adding: int) -> None:
        held = sum(len(topic.partitions) for topic in self._topics.values())
        held += sum(self._changing.values())
        if self.max_partitions is not None and held + adding > self.max_partitions:
            raise InvalidPartitionsError(
                f"{adding} more partitions would make {held + adding} on this broker, above "
                f"max.broker.partitions {self.max_partitions} (each keeps files open)"
            )

    def add_partitions(self, name: str, total: int) -> Topic:
        """Grow a topic to ``total`` partitions (CreatePartitions); never shrinks."""
        with self._lock:
            topic = self._topic(name)
            if name in self._changing:
                raise InvalidPartitionsError(f"topic {name!r} is being grown")
            if total <= len(topic.partitions):
                raise InvalidPartitionsError(
                    f"topic {name!r} has {len(topic.partitions)} partitions; "
                    f"{total} would not add any"
                )
            _check_partitions(total)
            self._check_total(total - len(topic.partitions))
            self._changing[name] = total - len(topic.partitions)
        try:
            # Metadata first: partition directories beyond its count count as orphans.
            self._write_meta(topic, total)
            for partition in range(len(topic.partitions), total):
                log = self._open_log(name, partition, topic.config)
                topic.partitions.append(log)  # one at a time: each is whole once listed
            return topic
        except OSError as exc:
            raise storage_fault(exc, f"add partitions to {name!r} in", self.data_dir) from exc
        finally:
            with self._lock:
                del self._changing[name]

    def delete_topic(self, name: str) -> None:
        """Forget the topic (metadata first, so a crash cannot revive half of it), then
        delete its partitions' files."""
        with self._lock:
            topic = self._topic(name)
            if name in self._changing:
                raise InvalidPartitionsError(f"topic {name!r} is being grown; delete it after")
            self._topics = {k: v for k, v in self._topics.items() if k != name}
            self._meta_path(topic).unlink(missing_ok=True)
            fsync_dir(self.data_dir / TOPICS_DIR)
        for log in topic.partitions:
            log.delete()

    # ------------------------------------------------------------------ configs

    def alter_config(self, name: str, overrides: Mapping[str, str]) -> Topic:
        """Replace the topic's override set: validate, persist, then apply to its logs."""
        with self._lock:
            topic = self._topic(name)
            config = TopicConfig.from_overrides(overrides, self._defaults)
            topic.overrides = dict(overrides)
            topic.config = config
            self._write_meta(topic)
            for log in topic.partitions:
                log.update_config(config)
            return topic

    def incremental_alter_config(
        self, name: str, set: Mapping[str, str], delete: Iterable[str]
    ) -> Topic:
        """Set some overrides and remove others (back to the default), atomically."""
        overrides = dict(self._topic(name).overrides)
        for key in delete:
            if key not in CONFIG_DEFS:
                raise InvalidConfigError(f"unknown topic config {key!r}")
            overrides.pop(key, None)
        overrides.update(set)
        return self.alter_config(name, overrides)

    # ------------------------------------------------------------------ maintenance

    def logs(self) -> list[PartitionLog]:
        with self._lock:
            return [log for topic in self._topics.values() for log in topic.partitions]

    def run_retention(self, now_ms: int) -> int:
        """Apply retention to every log; returns the number of segments removed."""
        removed = 0
        for log in self.logs():
            try:
                removed += log.apply_retention(now_ms)
            except LogClosedError:
                continue  # its topic was deleted meanwhile
        return removed

    def run_compaction(
        self,
        now_ms: int,
        clean_up_to: CleanUpTo | None = None,
        aborted_index: AbortedIndexOf | None = None,
    ) -> int:
        """Clean the compacted logs that are due (see ``_cleaner``), none beyond
        ``clean_up_to(log)`` (the partition's last stable offset, where the caller keeps
        track of transactions), releasing aborted transactions from
        ``aborted_index(log)`` so that their markers may go (see ``_markers``); returns
        how many were cleaned. Blocks for the whole pass: call it from a worker thread."""
        return len(self._cleaner.run(self.logs(), now_ms, clean_up_to, aborted_index))

    def checkpoint_synced_positions(self, now_ms: int) -> int:
        """Write every log's synced position (``_synced_checkpoint``) if any moved since
        the last write; returns how many logs it lists. Blocks on two fsyncs: call it
        from a worker thread."""
        content = render({log.directory.name: log.synced_position for log in self.logs()})
        if content != self._checkpointed:
            write_positions(self.data_dir, content)
            self._checkpointed = content
        return content.count(b"\n") - 1

    def close(self) -> None:
        """Close every log cleanly (fsync, clean-shutdown marker)."""
        for log in self.logs():
            log.close()


def _holds_only_log_files(directory: Path) -> bool:
    # Removing a directory is only safe if it is certainly a partition log of ours.
    return all(_LOG_FILE.fullmatch(entry.name) for entry in directory.iterdir())
