"""librdkafka's log, kept off the terminal and turned into the reason of an error.

Left alone, librdkafka prints its log to stderr: against an unreachable broker that is a
line per reconnect, dozens a second, before the call that needed the broker gives up.
Each client here gets a ``ClientLog`` instead (confluent-kafka's ``logger`` setting takes
any object with ``log(level, msg, *args)``). It passes every line to the
``headrace.spark_bridge.librdkafka`` logger at DEBUG, and keeps the newest warning or
error, so the ``BrokerRequestError`` raised when a call fails can say why in one line.

confluent-kafka hands lines to the logger only while the client is polled, so a caller
that wants the reason polls once first (``ConfluentClient`` does, on failure only).
"""

from __future__ import annotations

import logging
import re
from typing import Any

_LOG = logging.getLogger("headrace.spark_bridge.librdkafka")

# "[thrd:127.0.0.1:1/bootstrap]: 127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1
#  failed: Connection refused (after 0ms in state CONNECT)": the thread and broker
# prefixes and the state suffix are noise in a message that already names the broker.
_BROKER_PREFIX = re.compile(r"^(?:\[thrd:[^\]]*\]: )?(?:\S+/\S+: )?")
_STATE_SUFFIX = re.compile(r" \(after \d+ms in state \w+\)$")


class ClientLog:
    """A confluent-kafka ``logger``: lines to DEBUG, the newest problem kept."""

    def __init__(self) -> None:
        self.last_problem: str | None = None

    def log(self, level: int, msg: str, *args: Any) -> None:
        # confluent-kafka calls log(level, "%s [%s] %s", facility, client name, text).
        text = str(args[-1]) if args else msg
        if level >= logging.WARNING:
            self.last_problem = _STATE_SUFFIX.sub("", _BROKER_PREFIX.sub("", text.strip()))
        _LOG.debug(msg, *args)
