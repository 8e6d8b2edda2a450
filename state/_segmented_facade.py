"""What window and session stores share over their ``SegmentedBytesStore`` stack."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ._protocols import ChangeRecord, FlushListener, StateStoreContext
from ._segmented import SegmentedBytesStore


class SegmentedFacade:
    """Lifecycle, restore and flush listener pass through to ``raw``; ``_observed`` is
    the greatest time this facade has written, for the expiry it applies itself."""

    def __init__(self, raw: SegmentedBytesStore, retention: int) -> None:
        self.raw = raw
        self.retention = retention
        self._observed = -1
        self._context: StateStoreContext | None = None

    @property
    def name(self) -> str:
        return self.raw.name

    @property
    def persistent(self) -> bool:
        return self.raw.persistent

    def init(self, context: StateStoreContext) -> None:
        self.raw.init(context)
        self._context = context
        self._observed = -1

    def flush(self) -> None:
        self.raw.flush()

    def close(self) -> None:
        self.raw.close()

    @property
    def supports_checkpoint(self) -> bool:
        return self.raw.supports_checkpoint

    def checkpoint(self, dest: Path) -> None:
        self.raw.checkpoint(dest)

    def _min_live(self) -> int:
        # Cached entries have not reached the segmented store yet, so expiry is applied
        # here as well, on top of whatever stack is below.
        stream_time = self._context.stream_time if self._context is not None else -1
        return max(self._observed, stream_time) - self.retention + 1

    def restore_batch(self, records: Iterable[ChangeRecord]) -> None:
        self.raw.restore_batch(records)

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool = False) -> bool:
        """Listener entries carry binary keys; ``raw.schema``'s layout decodes them
        (``WindowKeySchema.decode``, ``SessionKeySchema.decode``)."""
        return self.raw.set_flush_listener(listener, send_old_values)
