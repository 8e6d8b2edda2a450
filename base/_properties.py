"""Java ``.properties`` files, as Kafka's server.properties and client configs are written.

``key=value``, ``key: value`` or ``key value``; lines starting with ``#`` or ``!`` are
comments; a line ending in an odd number of backslashes continues on the next. Escapes
``\\t \\n \\r \\\\ \\= \\: \\#`` and ``\\uXXXX`` are understood.
"""

from __future__ import annotations

import re
from pathlib import Path

_SEPARATOR = re.compile(r"(?<!\\)\s*[=:]\s*|(?<!\\)\s+")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip() if pending else raw.strip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def parse_properties(text: str) -> dict[str, str]:
    properties = {}
    for line in _logical_lines(text):
        match = _SEPARATOR.search(line)
        if match is None:
            key, value = line, ""
        else:
            key, value = line[: match.start()], line[match.end() :]
        properties[_unescape(key)] = _unescape(value.strip())
    return properties


def read_properties(path: str | Path) -> dict[str, str]:
    """The properties in ``path``; a missing file raises FileNotFoundError naming it."""
    return parse_properties(Path(path).read_text(encoding="utf-8"))
