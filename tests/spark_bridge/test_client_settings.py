"""The reader's librdkafka settings: what it sets for speed, and that a user's
``kafka.*`` setting still wins over it."""

from __future__ import annotations

from headrace.spark_bridge._kafka import FETCH_QUEUE_BACKOFF_MS, ConfluentClient, client_config
from headrace.spark_bridge._options import parse_options


def test_fetch_queue_backoff_is_short_by_default() -> None:
    """librdkafka's own default (1000 ms) idles a reader that drains its queue fast."""
    options = parse_options({"kafka.bootstrap.servers": "h:1", "subscribe": "a"}, streaming=False)
    config = client_config(
        options.bootstrap_servers, options.isolation_level, options.client_config
    )
    assert config["fetch.queue.backoff.ms"] == FETCH_QUEUE_BACKOFF_MS
    assert FETCH_QUEUE_BACKOFF_MS < 1000


def test_a_users_fetch_queue_backoff_wins() -> None:
    raw = {
        "kafka.bootstrap.servers": "h:1",
        "subscribe": "a",
        "kafka.fetch.queue.backoff.ms": "250",
    }
    for streaming in (False, True):
        options = parse_options(raw, streaming=streaming)
        config = client_config(
            options.bootstrap_servers, options.isolation_level, options.client_config
        )
        assert config["fetch.queue.backoff.ms"] == "250"


def test_librdkafka_takes_the_setting() -> None:
    """The key is one librdkafka knows: a consumer is made with it (none is contacted)."""
    with ConfluentClient("127.0.0.1:1", extra={"fetch.queue.backoff.ms": "250"}):
        pass
    with ConfluentClient("127.0.0.1:1"):
        pass
