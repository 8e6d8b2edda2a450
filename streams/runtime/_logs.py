"""Structured logs: one JSON object per line, or plain text for people at a terminal.

Fields beyond the message go in ``extra={"fields": {...}}`` and land as top-level keys.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(fmt: str, level: str) -> None:
    """Install one stderr handler on the ``headrace.streams`` logger tree (idempotent)."""
    logger = logging.getLogger("headrace.streams")
    logger.setLevel(level)
    for handler in list(logger.handlers):
        if getattr(handler, "_headrace", False):
            logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler._headrace = True  # type: ignore[attr-defined]
    handler.setFormatter(
        JsonFormatter()
        if fmt == "json"
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    logger.addHandler(handler)
    logger.propagate = False
