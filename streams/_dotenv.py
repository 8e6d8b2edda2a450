"""``.env`` files for ``headrace run``: ``HEADRACE_*`` settings kept beside an app.

A line is ``KEY=VALUE``, optionally after ``export``; blank lines and lines starting with
``#`` are skipped; a value in single or double quotes is taken as written inside them
(double quotes also read ``\\n``, ``\\t``, ``\\"`` and ``\\\\``), an unquoted value ends at
`` #``. Only ``HEADRACE_*`` keys are read: a ``.env`` written for other tools in the same
folder changes nothing here. Real environment variables win over the file.

Written here rather than with python-dotenv, which logs a warning and skips a line it
cannot parse: a deployment's misspelt setting would then run with its default. Here it
stops the start with the file and line.

>>> env = environment_with({"HEADRACE_STATE_DIR": "/srv"},
...                        'HEADRACE_STATE_DIR=./s\\nHEADRACE_LOG_LEVEL="debug"\\nOTHER=1\\n')
>>> sorted(env.items())
[('HEADRACE_LOG_LEVEL', 'debug'), ('HEADRACE_STATE_DIR', '/srv')]
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Mapping

from ._errors import ConfigError

PREFIX = "HEADRACE_"
DEFAULT_FILE = ".env"
_LINE = re.compile(r"\s*(?:export\s+)?(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?P<value>.*)")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def parse(text: str, source: str = DEFAULT_FILE) -> dict[str, str]:
    """The ``HEADRACE_*`` settings of a ``.env`` file's text."""
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            raise ConfigError(f"{source}, line {number}: expected KEY=VALUE, got {line!r}")
        key, value = match["key"], _value(match["value"].strip(), source, number)
        if key.startswith(PREFIX):
            found[key] = value
    return found


def _value(raw: str, source: str, number: int) -> str:
    if raw[:1] in ("'", '"'):
        quote = raw[0]
        end = raw.find(quote, 1) if quote == "'" else _closing_double_quote(raw)
        if end < 0:
            raise ConfigError(f"{source}, line {number}: unterminated {quote} quote")
        inner = raw[1:end]
        if quote == '"':
            inner = re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], m[0]), inner)
        return inner
    return raw.split(" #", 1)[0].rstrip()


def _closing_double_quote(raw: str) -> int:
    i = 1
    while i < len(raw):
        if raw[i] == "\\":
            i += 2
            continue
        if raw[i] == '"':
            return i
        i += 1
    return -1


def environment_with(
    environ: Mapping[str, str], text: str, source: str = DEFAULT_FILE
) -> dict[str, str]:
    """``environ`` over the ``HEADRACE_*`` settings of ``text``: real variables win."""
    merged = parse(text, source)
    merged.update(environ)
    return merged


def load_environment(environ: Mapping[str, str], env_file: str | None) -> dict[str, str]:
    """``environ`` with a ``.env`` file below it: ``env_file`` (which must exist), or
    ``.env`` in the working directory when there is one."""
    path = pathlib.Path(env_file or DEFAULT_FILE)
    try:
        text = path.read_text()
    except FileNotFoundError:
        if env_file is None:
            return dict(environ)
        raise ConfigError(f"no such env file: {env_file}") from None
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    return environment_with(environ, text, str(path))
