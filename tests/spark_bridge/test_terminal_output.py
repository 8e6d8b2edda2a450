"""The export's progress bar and the sql command's table rendering."""

from __future__ import annotations

import io

from headrace.base.progress import ProgressBar
from headrace.base.table import QUERY_RESULT, render_table


def test_progress_bar_draws_fraction_and_count() -> None:
    out = io.StringIO()
    bar = ProgressBar(200, label="t ", stream=out, width=10, interval=0.0)
    bar.advance(50)
    assert out.getvalue().startswith("\rt [##--------] 50/200  25%")
    bar.advance(150)
    bar.finish()
    assert out.getvalue().rstrip("\n").rsplit("\r", 1)[-1].startswith("t [##########] 200/200 100%")
    assert out.getvalue().endswith(" rec/s\n")


def test_empty_total_is_complete() -> None:
    out = io.StringIO()
    ProgressBar(0, stream=out).finish()
    assert "100%" in out.getvalue()


def test_render_table_aligns_numbers_right_and_shows_nulls() -> None:
    text = render_table(
        ["page", "views", "note"],
        [("/home", 1200, None), ("/docs", 7, b"caf\xc3\xa9"), ("/x", 0.5, "")],
        QUERY_RESULT,
    )
    lines = text.splitlines()
    assert lines[0] == "page   views  note"
    assert lines[1] == "-----  -----  ----"
    assert lines[2] == "/home   1200  NULL"
    assert lines[3] == "/docs      7  café"
    assert lines[4] == "/x       0.5"
