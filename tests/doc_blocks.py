"""Running the fenced code blocks of the project's Markdown: the README and the docs site.

A block's tag says what happens to it: ``python`` blocks are executed (the blocks of one
page in order, in one namespace), ``sh`` blocks are run by bash, and the other tags name
text that is shown and not run (output, configuration files).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(\S*)\n(.*?)^```", flags=re.S | re.M)
RUN_TAGS = {"python", "sh"}


def blocks(path: Path, tag: str) -> list[str]:
    return [body for block_tag, body in FENCE.findall(path.read_text()) if block_tag == tag]


def blocks_in_place(path: Path, tag: str) -> list[str]:
    """The ``tag`` blocks, each preceded by as many empty lines as precede it on the page,
    so a traceback from a block points at the page's own line."""
    text = path.read_text()
    return [
        "\n" * text.count("\n", 0, match.start(2)) + match.group(2)
        for match in FENCE.finditer(text)
        if match.group(1) == tag
    ]


def tags(path: Path) -> list[str]:
    return [tag for tag, _body in FENCE.findall(path.read_text())]


def clean_env() -> dict[str, str]:
    """The caller's environment without settings that would redirect a page's commands."""
    return {
        k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("HEADRACE_")
    }


def shell_env(bootstrap_servers: str) -> dict[str, str]:
    """What a page's shell blocks run with: the project's ``.venv/bin`` on ``PATH``, and
    ``bootstrap_servers`` for the commands that rely on the default broker address."""
    return {
        **clean_env(),
        "HEADRACE_BOOTSTRAP_SERVERS": bootstrap_servers,
        "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}",
    }


def run_bash(
    script: str, cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """``script`` under ``bash -euo pipefail``; whatever it leaves running is stopped after.

    bash runs in a process group of its own, and the commands it starts with ``&`` stay in
    that group, so a script that fails (or times out) before its ``kill`` lines does not
    leave a broker or a service behind: the group is sent SIGTERM by its id.
    """
    proc = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        err += f"\n(timed out after {timeout} s)"
    finally:
        # ProcessLookupError: the group is gone, everything it started has stopped.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def move_ports(script: str, ports: dict[int, int]) -> str:
    """``script`` with each default port number rewritten to a free one.

    Pages use the default ports (9092 for the broker, 8080 for a service's HTTP server);
    other tests share the machine, so a test moves them wherever the page writes them."""
    for default, port in ports.items():
        script = re.sub(rf"\b{default}\b", str(port), script)
    return script
