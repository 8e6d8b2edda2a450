"""Asking a running instance's HTTP server: its address, JSON answers, waiting on them.

Imports nothing from the tests' other helpers: the instance processes load the test
files that use it, with only this folder on their path."""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any, Protocol


class _Logged(Protocol):
    def wait_for(self, text: str, timeout: float) -> None: ...
    def log(self) -> str: ...


async def http_address(inst: _Logged) -> str:
    """The ``host:port`` the instance's HTTP server listens on (it picks a free port)."""
    await asyncio.to_thread(inst.wait_for, "[run]", 60)
    found = re.search(r"\[run\] .*; http://(\S+) \(", inst.log())
    assert found is not None, inst.log()[-2000:]
    return found.group(1)


def _fetch(address: str, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(f"http://{address}{path}", timeout=10) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


async def get(address: str, path: str) -> tuple[int, Any]:
    """The status and JSON body of ``GET path``, 4xx and 5xx included."""
    return await asyncio.to_thread(_fetch, address, path)


async def until(check: Callable[[], Awaitable[Any]], wait: float = 30) -> None:
    """Await ``check()`` until it returns true; fail with its last answer otherwise."""
    deadline = time.monotonic() + wait
    while True:
        answer = await check()
        if answer is True or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    assert answer is True, answer
