"""A store context for tests and benchmarks: records what stores log."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class StoreTestContext:
    """Satisfies ``StateStoreContext``; ``changelog`` keeps every logged change in order
    as ``(store name, key, value, timestamp)``; set ``stream_time`` to move time."""

    state_dir: Path
    application_id: str = "test-app"
    task_id: str = "0_0"
    stream_time: int = 0
    changelog: list[tuple[str, bytes, bytes | None, int]] = field(default_factory=list)

    def log_change(self, store_name: str, key: bytes, value: bytes | None, timestamp: int) -> None:
        self.changelog.append((store_name, key, value, timestamp))

    def changes_of(self, store_name: str) -> list[tuple[bytes, bytes | None]]:
        """The logged ``(key, value)`` pairs of one store, ready for ``restore_batch``."""
        return [(k, v) for name, k, v, _ in self.changelog if name == store_name]
