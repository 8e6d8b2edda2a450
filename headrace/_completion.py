"""``headrace completion bash|zsh|fish``: a shell completion script.

The script is a table written from ``headrace.cli.build_parser()``: for each command path
(``""``, ``"topics"``, ``"topics create"``...) the words that may follow it (its
subcommands and options), and for each option with choices, those choices. So a new
command or flag completes as soon as it exists. Install it with
``headrace completion bash > ~/.local/share/bash-completion/completions/headrace``, or
``source <(headrace completion bash)`` in ``~/.bashrc``.

zsh and fish get argcomplete's scripts, which ask ``headrace`` itself what may follow the
words typed (``complete`` below). argcomplete, not shtab, because shtab writes no fish
script; argcomplete does both, and a question costs one start of ``headrace``, which
imports only the command being typed (headrace.cli). bash keeps the table above: it needs
no process per TAB.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Callable, Iterator, Sequence
from typing import Any

_FUNCTION = """\
_headrace() {
    local cur prev path word i
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    path=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${COMP_WORDS[i]}"
        case " $(_headrace_subcommands "$path") " in
            *" $word "*) path="${path:+$path }$word" ;;
        esac
    done
    local choices
    choices="$(_headrace_choices "$path" "$prev")"
    if [[ -n "$choices" ]]; then
        if [[ "$choices" == "<value>" ]]; then
            compopt -o default 2>/dev/null
            COMPREPLY=()
        else
            COMPREPLY=($(compgen -W "$choices" -- "$cur"))
        fi
        return 0
    fi
    COMPREPLY=($(compgen -W "$(_headrace_words "$path")" -- "$cur"))
    if [[ ${#COMPREPLY[@]} -eq 0 && "$cur" != -* ]]; then
        compopt -o default 2>/dev/null
    fi
    return 0
}
complete -F _headrace headrace
"""


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    completion = subparsers.add_parser(
        "completion",
        help="print a shell completion script",
        description="Print a completion script: source <(headrace completion bash) in"
        " ~/.bashrc, source <(headrace completion zsh) in ~/.zshrc, or headrace completion"
        " fish > ~/.config/fish/completions/headrace.fish",
    )
    completion.add_argument("shell", choices=("bash", "zsh", "fish"))
    completion.set_defaults(handler=_print)


def _print(args: argparse.Namespace) -> int:
    if args.shell != "bash":
        from argcomplete.shell_integration import shellcode

        print(shellcode(["headrace"], shell=args.shell), end="")
        return 0
    from headrace.cli import build_parser

    print(bash_script(build_parser()), end="")
    return 0


def complete(parser_for: Callable[[Sequence[str]], argparse.ArgumentParser]) -> None:
    """Answer a zsh or fish script's question (``_ARGCOMPLETE`` is set) with the words
    that may follow the line typed, and exit; ``parser_for`` builds the parser of the
    command the line names."""
    from argcomplete.finders import CompletionFinder

    line = os.environ.get("COMP_LINE", "")[: int(os.environ.get("COMP_POINT", "0") or 0)]
    CompletionFinder()(parser_for(line.split()[1:]))


def _walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:  # argparse keeps subcommands only here
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, (*path, name))


def _subcommands(parser: argparse.ArgumentParser) -> list[str]:
    return [
        name
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    ]


def bash_script(parser: argparse.ArgumentParser) -> str:
    subcommands, words, choices = [], [], []
    for path, sub in _walk(parser):
        key = shlex.quote(" ".join(path))
        names = _subcommands(sub)
        options = [o for a in sub._actions for o in a.option_strings]
        # positional arguments with fixed choices (``completion bash``) complete too
        names += [
            str(c)
            for a in sub._actions
            if not a.option_strings and a.choices and not isinstance(a, argparse._SubParsersAction)
            for c in a.choices
        ]
        subcommands.append(f"        {key}) echo {shlex.quote(' '.join(_subcommands(sub)))} ;;")
        words.append(f"        {key}) echo {shlex.quote(' '.join(names + options))} ;;")
        for action in sub._actions:
            if not action.option_strings or action.nargs == 0:
                continue
            values = (
                "<value>" if action.choices is None else " ".join(str(c) for c in action.choices)
            )
            for option in action.option_strings:
                pair = shlex.quote(f"{' '.join(path)}|{option}")
                choices.append(f"        {pair}) echo {shlex.quote(values)} ;;")
    return "\n".join(
        [
            "# bash completion for headrace (generated by `headrace completion bash`)",
            "_headrace_subcommands() {",
            '    case "$1" in',
            *subcommands,
            "    esac",
            "}",
            "_headrace_words() {",
            '    case "$1" in',
            *words,
            "    esac",
            "}",
            "_headrace_choices() {",
            '    case "$1|$2" in',
            *choices,
            "    esac",
            "}",
            _FUNCTION,
        ]
    )
