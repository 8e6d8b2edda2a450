"""The small JSON path the message search understands, and nothing more.

``$.a.b[0].c`` names a value inside a JSON document (``$`` is the document; ``.name``
a member, ``[n]`` an element of an array). Alone, a path matches the documents that
hold a value there; followed by a comparison (``==``, ``!=``, ``<``, ``<=``, ``>``,
``>=``) and a value, those whose value there compares so. The value is read as JSON
(``5``, ``"five"``, ``true``, ``null``), or else as a string: ``$.user.name == ann``.
``<`` and friends compare numbers with numbers and strings with strings only.

>>> match = path_matcher('$.user.id == 5')
>>> match({"user": {"id": 5}}), match({"user": {"id": "5"}}), match({"user": {}})
(True, False, False)
>>> path_matcher('$.items[1]')({"items": [0, None]})
True
>>> path_matcher('$.total >= 10')({"total": 12.5})
True
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable
from typing import Any

_STEP = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\[\"([^\"]*)\"\]")
_COMPARISON = re.compile(r"^(.*?)\s*(==|!=|<=|>=|<|>)\s*(.*)$")
_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_MISSING = object()


def path_matcher(expression: str) -> Callable[[Any], bool]:
    """A test of a parsed JSON document; ValueError saying why for what is not a path."""
    found = _COMPARISON.match(expression.strip())
    path_text, op, wanted = found.groups() if found else (expression.strip(), None, None)
    steps = _steps(path_text.strip())
    target = _literal(wanted.strip()) if wanted is not None else None

    def match(document: Any) -> bool:
        value = _walk(document, steps)
        if value is _MISSING:
            return False
        if op is None:
            return True
        if op in ("==", "!="):
            same = (value == target and type(value) is type(target)) or _same_number(value, target)
            return same if op == "==" else not same
        if _comparable(value, target):
            return _OPERATORS[op](value, target)
        return False

    return match


def _steps(path: str) -> list[str | int]:
    if not path.startswith("$"):
        raise ValueError(f"a JSON path starts with $ (as in $.user.id), not {path!r}")
    steps: list[str | int] = []
    at = 1
    while at < len(path):
        step = _STEP.match(path, at)
        if step is None:
            raise ValueError(f"cannot read the JSON path {path!r} from {path[at:]!r}")
        name, index, quoted = step.groups()
        steps.append(int(index) if index is not None else (name if name is not None else quoted))
        at = step.end()
    return steps


def _walk(document: Any, steps: list[str | int]) -> Any:
    value = document
    for step in steps:
        inside_list = isinstance(step, int) and isinstance(value, list) and step < len(value)
        inside_dict = isinstance(step, str) and isinstance(value, dict) and step in value
        if not (inside_list or inside_dict):
            return _MISSING
        value = value[step]
    return value


def _literal(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same_number(a: Any, b: Any) -> bool:
    return _number(a) and _number(b) and a == b


def _comparable(a: Any, b: Any) -> bool:
    return (_number(a) and _number(b)) or (isinstance(a, str) and isinstance(b, str))
