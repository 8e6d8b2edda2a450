"""What the share-group handlers (keys 76-79) have in common."""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from .._state import BrokerState
from ..share import ShareError
from ..share._service import ShareService


def share_service(state: BrokerState) -> ShareService:
    if state.share is None:
        raise RuntimeError("share groups are not running")
    return state.share


def code_of(error: ShareError | None) -> ErrorCode:
    return ErrorCode.none if error is None else error.code


def message_of(error: Exception | None) -> str | None:
    return None if error is None else str(error)


def topic_names(service: ShareService, topic_ids: Any) -> dict[uuid.UUID, str | None]:
    """Each requested topic id and its topic's name (None: no such topic)."""
    return {t: service.topic_name(t) for t in topic_ids if t is not None}
