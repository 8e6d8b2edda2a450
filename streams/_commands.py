"""`headrace run path/to/app.py:app` (or `module:app`): an App as a service.

The target names an ``App``, a ``Topology``, a ``StreamsBuilder``, or a function
returning one of them; anything but an App needs an application id (``--application-id``
or ``HEADRACE_APPLICATION_ID``). Each setting comes from the first of these that has it:

1. a flag given on the command line;
2. a ``HEADRACE_*`` environment variable (``HEADRACE_BOOTSTRAP_SERVERS``, ...), or below
   it the same line in a ``.env`` file (``--env-file``, default ``./.env``);
3. the App's own constructor arguments (``App(..., bootstrap_servers=...)``);
4. a settings file: ``--settings FILE``, over the App's own ``settings_file``;
5. the defaults (``AppSettings``; the bootstrap servers default to 127.0.0.1:9092).

A flag that is not given takes no part: no flag has a default of its own that could
replace an App's setting. While it runs, one status line per interval says what the
instance is doing.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import importlib
import importlib.util
import logging
import os
import pathlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._describe_command import register as register_describe
from ._dotenv import load_environment
from ._errors import ConfigError
from ._setting_flags import add_setting_flags, given_settings

if TYPE_CHECKING:
    from .runtime import App

_PRECEDENCE = """\
Each setting comes from the first of: a flag given here; a HEADRACE_* environment
variable (HEADRACE_BOOTSTRAP_SERVERS, HEADRACE_LOG_LEVEL, ... one per setting), then the
same in a .env file (--env-file, default ./.env when there is one); the App's
own constructor arguments; a settings file (--settings, then the App's settings_file);
the defaults. So `headrace run app.py:app` runs the App with its own settings, and a
flag or variable overrides one only when given. Targets that are not an App use
--bootstrap-servers, else $HEADRACE_BOOTSTRAP_SERVERS, else 127.0.0.1:9092.
"""


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    # Not built on ``broker_options``: its --bootstrap-servers has a default (the
    # environment's, or 127.0.0.1:9092), which would replace an App's own servers.
    run = subparsers.add_parser(
        "run",
        help="run a stream processing application as a service",
        description="Run a stream processing application as a service.",
        epilog=_PRECEDENCE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("target", help="path/to/app.py:NAME or package.module:NAME")
    add_setting_flags(run)
    run.add_argument("--settings", help="a TOML or JSON settings file")
    run.add_argument(
        "--command-config",
        metavar="FILE",
        help="Kafka client properties (security.protocol, sasl.*, ssl.*)",
    )
    run.add_argument(
        "--env-file",
        metavar="FILE",
        help="HEADRACE_* settings below the real environment (default: ./.env when there is one)",
    )
    run.add_argument(
        "--status-interval", type=float, default=5.0, help="seconds between status lines (0: none)"
    )
    run.set_defaults(handler=_run)
    register_describe(subparsers)


def load_target(target: str) -> Any:
    """The object ``path/to/file.py:NAME`` or ``module:NAME`` names. A target that names
    nothing says what was likely meant: ``app:app`` for the file ``app.py`` beside,
    ``app.py`` with no name, a misspelt file or name."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise ConfigError(
            f"target must look like path/to/app.py:app or module:app, not {target!r}"
            + _meant_file(where or name)
        )
    if where.endswith(".py") or "/" in where:
        module = _load_file(where)
    else:
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as error:
            if error.name is None or not where.startswith(error.name):
                raise  # the module was found; something it imports was not
            raise ConfigError(f"no module named {where!r}{_meant_file(where, name)}") from None
    try:
        return getattr(module, name)
    except AttributeError:
        names = [n for n in vars(module) if not n.startswith("_")]
        near = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {where}:{near[0]}?" if near else ""
        raise ConfigError(f"{where} has no attribute {name!r}{hint}") from None


def _load_file(where: str) -> Any:
    path = pathlib.Path(where).resolve()
    if not path.is_file():
        siblings = [p.name for p in path.parent.glob("*.py")] if path.parent.is_dir() else []
        near = difflib.get_close_matches(path.name, siblings, n=1)
        hint = f"; did you mean {pathlib.Path(where).with_name(near[0])!s}?" if near else ""
        raise ConfigError(f"no such file: {where}{hint}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load {where}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    # As ``python app.py`` would: the app's own folder first on the path, so the
    # modules beside it import.
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec.loader.exec_module(module)
    return module


def _meant_file(where: str, name: str | None = None) -> str:
    """ "; did you mean app.py:NAME?" when ``where`` (a module name, or a path without
    ``:NAME``) is a Python file here: a module is imported from the path, which holds
    the current folder only under ``python -m``, so ``app:app`` rarely finds app.py.
    Without a name the file's App (or topology) is looked up to offer one."""
    candidates = [where] if where.endswith(".py") else [where.replace(".", "/") + ".py", where]
    found = next((c for c in candidates if pathlib.Path(c).is_file()), None)
    if found is None:
        return ""
    return f"; did you mean {found}:{name or _runnable_name(found)}?"


def _runnable_name(path: str) -> str:
    """The name of the file's App, else its Topology, else its StreamsBuilder ("NAME" if
    none, or if it does not load)."""
    from .runtime import App

    try:
        module = _load_file(path)
    except Exception:  # the suggestion is a courtesy; the error is the target's
        return "NAME"
    public: list[tuple[str, Any]] = [(n, v) for n, v in vars(module).items() if n[:1] != "_"]
    kinds: tuple[Callable[[Any], bool], ...] = (
        lambda value: isinstance(value, App),
        _is_topology,
        _is_builder,
    )
    for runnable in kinds:
        found = [attribute for attribute, value in public if runnable(value)]
        if found:
            return found[0]
    return "NAME"


def _is_topology(value: Any) -> bool:
    from ._topology import Topology

    return isinstance(value, Topology)


def _is_builder(value: Any) -> bool:
    # The DSL sits above this package: its builder is known by its build() alone.
    return type(value).__name__ == "StreamsBuilder" and callable(getattr(value, "build", None))


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the command line gives; ``None`` where a flag was not given. A flag
    wins over the same setting from ``--command-config``."""
    options = given_settings(args)
    for name, value in _security_options(args.command_config).items():
        if options.get(name) is None:
            options[name] = value
    return options


def _security_options(command_config: str | None) -> dict[str, Any]:
    """App settings from a Kafka client properties file (none without one)."""
    if not command_config:
        return {}
    from headrace.base import ClientSecurity, read_properties

    security = ClientSecurity.from_properties(read_properties(command_config))
    return {
        "security_protocol": security.security_protocol,
        "sasl_mechanism": security.sasl_mechanism,
        "sasl_username": security.sasl_username,
        "sasl_password": security.sasl_password,
        "ssl_cafile": security.ssl_cafile,
        "ssl_certfile": security.ssl_certfile,
        "ssl_keyfile": security.ssl_keyfile,
        "ssl_password": security.ssl_password,
        "ssl_check_hostname": security.ssl_check_hostname,
    }


def build_app(args: argparse.Namespace) -> Any:
    """The App ``args.target`` names, its settings resolved as the module docstring says."""
    from .runtime import App, AppSettings

    env = load_environment(os.environ, args.env_file)
    obj = load_target(args.target)
    if isinstance(obj, App):
        return obj.reconfigured(env, args.settings, **_options(args))
    if not _has_application_id(args, env):
        raise ConfigError(
            f"{args.target} is not an App: give it an application id with "
            "--application-id (or HEADRACE_APPLICATION_ID, or in --settings)"
        )
    return App(topology=obj, settings=AppSettings.load(args.settings, env, **_options(args)))


def _has_application_id(args: argparse.Namespace, env: dict[str, str]) -> bool:
    from .runtime._settings import ENV_PREFIX, read_settings_file

    if args.application_id or env.get(ENV_PREFIX + "APPLICATION_ID"):
        return True
    return args.settings is not None and "application_id" in read_settings_file(
        pathlib.Path(args.settings)
    )


def _run(args: argparse.Namespace) -> int:
    from .runtime import AppStopped
    from .runtime._logs import configure_logging

    app = build_app(args)
    configure_logging(app.settings.log_format, app.settings.log_level)
    # Where each setting came from is the question a debug run is most often for.
    logging.getLogger("headrace.streams.run").debug(
        "settings: %s", app.settings.model_dump(mode="json", exclude_defaults=True)
    )
    try:
        asyncio.run(_serve(app, args.status_interval))
    except AppStopped as error:
        print(f"headrace run: {error}", file=sys.stderr)
        return 1
    return 0


async def _show_restores(app: Any, interval: float = 0.2) -> None:
    """While tasks restore their stores, a progress bar of the changelog records left
    (on a terminal only: ``_serve`` starts this when stderr is one)."""
    from headrace.base.progress import ProgressBar

    bar: ProgressBar | None = None
    left = 0
    while True:
        await asyncio.sleep(interval)
        remaining = app.status()["restore_remaining"]
        if remaining and bar is None:
            bar, left = ProgressBar(remaining, label="restoring "), remaining
        elif bar is not None:
            if remaining > left:  # more tasks to restore joined in
                bar.total += remaining - left
            else:
                bar.advance(left - remaining)
            left = remaining
            if not remaining:
                bar.finish()
                bar = None


def _status_line(status: dict[str, Any]) -> str:
    restoring = (
        f" restoring {len(status['restoring'])} ({status['restore_remaining']} records left)"
        if status["restoring"]
        else ""
    )
    standby = f" standby={','.join(status['standby'])}" if status["standby"] else ""
    return (
        f"[status] {status['state']} tasks={','.join(status['tasks']) or '-'}{restoring}"
        f"{standby} consumed={status['consumed']} produced={status['produced']}"
    )


async def _serve(app: App, status_interval: float) -> None:
    """``App.serve`` with a line once running, a status line per interval and, on a
    terminal, a progress bar while stores restore."""
    restores: asyncio.Future[None] | None = None

    def started() -> None:
        nonlocal restores
        print(
            f"[run] {app.settings.application_id} running against "
            f"{app.settings.bootstrap_servers}"
            + (f"; http://{app.host} (/health /metrics /stores)" if app.host else ""),
            flush=True,
        )
        if sys.stderr.isatty():
            restores = asyncio.ensure_future(_show_restores(app))

    try:
        await app.serve(
            started=started,
            status=lambda: print(_status_line(app.status()), flush=True),
            status_interval=status_interval,
        )
    finally:
        if restores is not None:
            restores.cancel()
    print(f"[run] {app.settings.application_id} stopped cleanly", flush=True)
