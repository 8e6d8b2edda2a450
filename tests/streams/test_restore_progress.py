"""``headrace run`` on a terminal draws the restore's progress from the App's status:
the bar appears when tasks start restoring, grows when more join, and finishes at
zero records left."""

from __future__ import annotations

import asyncio
import io
from typing import Any

from headrace.streams import _commands


class _Restoring:
    """An App's status as restoring goes: records left at each look."""

    def __init__(self, remaining: list[int]) -> None:
        self._remaining = remaining

    def status(self) -> dict[str, Any]:
        return {
            "restore_remaining": self._remaining.pop(0)
            if len(self._remaining) > 1
            else self._remaining[0]
        }


async def test_bar_follows_the_records_left(monkeypatch: Any) -> None:
    terminal = io.StringIO()
    monkeypatch.setattr("sys.stderr", terminal)
    app = _Restoring([0, 1000, 600, 900, 300, 0, 0])
    shown = asyncio.ensure_future(_commands._show_restores(app, interval=0.01))
    await asyncio.sleep(0.3)
    shown.cancel()
    out = terminal.getvalue()
    assert "restoring [" in out
    final = out.rstrip("\n").rsplit("\r", 1)[-1]
    # 1,000 at first, 300 more joined: all 1,300 restored when the bar finished.
    assert "1,300/1,300" in final and "100%" in final and out.endswith("\n")
