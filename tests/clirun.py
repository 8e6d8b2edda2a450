"""Run the ``headrace`` command in this process, as a user would run it in a shell.

``headrace(capsys, *argv)`` calls ``headrace.cli.main`` and returns its exit status with
what it printed; a usage error (argparse's exit 2) is returned like any other status.
``stdin`` stands in for the terminal's input.
"""

from __future__ import annotations

import io
import re
import sys
from dataclasses import dataclass

import pytest

from headrace.cli import main


@dataclass(frozen=True)
class Done:
    code: int
    out: str
    err: str

    def one_line_error(self, text: str, code: int = 1) -> None:
        assert self.code == code, (self.code, self.out, self.err)
        assert "Traceback" not in self.err
        assert self.err.strip().count("\n") == 0, self.err
        assert text in self.err, self.err


def headrace(
    capsys: pytest.CaptureFixture[str], *argv: str, stdin: str | None = None, check: bool = True
) -> Done:
    capsys.readouterr()  # what came before is not this command's
    saved = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's usage errors and --help
        code = int(exc.code or 0)
    finally:
        sys.stdin = saved
    captured = capsys.readouterr()
    done = Done(code, captured.out, captured.err)
    if check:
        assert code == 0, (argv, captured.err)
    return done


def table(out: str, header: str) -> list[list[str]]:
    """The rows of the table whose header line starts with ``header``, each a list of cells.

    The CLI prints tables with ``base.table.render_table`` in its plain look: every column
    left-aligned, padded to its widest cell, two blanks before the next. So a column starts
    where its header's name starts, and each row is cut at those places. Splitting on blanks
    instead would drop an empty cell (a config whose value is empty) and shift the rest of
    the row left, or break a cell that holds a blank in two.
    """
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    # A name may hold single blanks; two or more end it (the renderer's column gap).
    starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", lines[start])]
    ends = [*starts[1:], None]
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        # A cell that runs into the next column means the table is not aligned as read.
        assert all(line[s - 2 : s].strip() == "" for s in starts[1:]), (lines[start], line)
        rows.append([line[s:e].strip() for s, e in zip(starts, ends, strict=True)])
    return rows
