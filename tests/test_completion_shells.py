"""``headrace completion zsh`` and ``fish``: each shell loads its script without error,
and fish, asking ``headrace`` through it, completes commands, subcommands and flags
from the parser. (bash's script is tested in tests/test_cli.py.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import headrace


def _shell(name: str) -> str:
    path = shutil.which(name)
    assert path is not None, f"{name} is needed (apt-get install {name})"
    return path


def _env() -> dict[str, str]:
    """``headrace`` on PATH: the scripts run it by name."""
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_shell_gets_a_script(capsys: pytest.CaptureFixture[str], shell: str) -> None:
    script = headrace(capsys, "completion", shell).out
    assert "headrace" in script
    if shell != "bash":
        assert "_ARGCOMPLETE" in script  # it asks headrace, which answers (cli.main)


def test_zsh_loads_its_script_and_binds_it_to_headrace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = tmp_path / "headrace.zsh"
    script.write_text(headrace(capsys, "completion", "zsh").out)
    done = subprocess.run(
        [
            _shell("zsh"),
            "-f",
            "-c",
            f"autoload -U compinit; compinit -u; source {script} "
            "&& print -r -- ${_comps[headrace]}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.strip() != ""  # a completion function is bound to headrace


def _fish_complete(script: Path, line: str) -> list[str]:
    done = subprocess.run(
        [_shell("fish"), "--no-config", "-c", f"source {script}; complete -C '{line}'"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
        check=True,
    )
    assert done.stderr == "", done.stderr
    return [row.split("\t")[0] for row in done.stdout.splitlines()]


def test_fish_completes_from_the_parser(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    script = tmp_path / "headrace.fish"
    script.write_text(headrace(capsys, "completion", "fish").out)
    assert _fish_complete(script, "headrace top") == ["topics"]
    assert set(_fish_complete(script, "headrace topics ")) >= {"create", "list", "delete"}
    flags = _fish_complete(script, "headrace topics create --")
    assert {"--partitions", "--bootstrap-servers", "--if-not-exists"} <= set(flags)
    assert {"bash", "zsh", "fish"} <= set(_fish_complete(script, "headrace completion "))
