"""Checks of a Dockerfile and a compose file that hold without a container engine.

No hadolint or docker daemon is needed: the files are parsed here and every command line
in them is parsed by ``headrace``'s own argument parser, so a flag that does not exist, a
value of the wrong type or a misspelt subcommand fails as it would in the container.
What is checked, and why each matters:

- Dockerfile: every instruction is one Docker knows; each base image is pinned to a
  version tag (never ``latest``, never none); ``COPY --from`` names an earlier stage;
  what ``COPY`` takes from the context exists there and is not left out by
  ``.dockerignore``; CMD is in exec form and runs a ``headrace`` command that parses.
- compose.yaml: only keys Compose knows; each service has an image or a build; each
  command, and each healthcheck, that runs ``headrace`` parses (``sh -c`` scripts are
  split at ``&&``); every published port is bound to 127.0.0.1 and is one the service's
  command listens on, on every interface of the container (a listener on the
  container's own loopback cannot be reached through a published port); a bootstrap
  address another service uses is one the broker advertises under that service's name;
  the ``HEADRACE_*`` variables are real settings; named volumes are declared.
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import json
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from headrace import cli
from headrace.base import read_properties
from headrace.log_broker.security import parse_listeners
from headrace.streams.runtime import AppSettings

INSTRUCTIONS = {
    "FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME",
    "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL",
}  # fmt: skip
SERVICE_KEYS = {
    "build", "image", "command", "entrypoint", "environment", "env_file", "ports",
    "volumes", "depends_on", "healthcheck", "restart", "networks", "expose", "user",
    "working_dir", "stop_signal", "stop_grace_period", "init",
}  # fmt: skip
TOP_KEYS = {"name", "services", "volumes", "networks", "configs", "secrets"}
DEPENDS_CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}
# HEADRACE_* variables read by something else than an App's settings.
OTHER_VARIABLES = {"HEADRACE_DEBUG", "HEADRACE_SCHEMA_REGISTRY_URL"}
EVERY_INTERFACE = {"0.0.0.0", "::", ""}
_LISTEN_FLAGS = ("--listen", "--console-listen", "--schema-registry-listen", "--metrics-listen")


@dataclass
class Instruction:
    keyword: str
    arguments: str
    line: int


@dataclass
class Stage:
    image: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)


def instructions(text: str) -> list[Instruction]:
    """A Dockerfile's instructions, continuation lines joined, comments left out."""
    found: list[Instruction] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction
        start = start or number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, arguments = (pending + line).partition(" ")
        found.append(Instruction(keyword, arguments.strip(), start))
        pending, start = "", 0
    assert not pending, "the Dockerfile ends inside a continued instruction"
    return found


def stages(text: str) -> list[Stage]:
    result: list[Stage] = []
    for instruction in instructions(text):
        assert instruction.keyword.isupper(), f"line {instruction.line}: {instruction.keyword}"
        assert instruction.keyword in INSTRUCTIONS, (
            f"line {instruction.line}: {instruction.keyword} is no Dockerfile instruction"
        )
        if instruction.keyword == "FROM":
            words = instruction.arguments.split()
            words = [w for w in words if not w.startswith("--platform")]
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            assert len(words) in (1, 3), f"line {instruction.line}: FROM {instruction.arguments}"
            result.append(Stage(words[0], name))
        else:
            assert result or instruction.keyword == "ARG", "the first instruction must be FROM"
            if result:
                result[-1].instructions.append(instruction)
    assert result, "no FROM"
    return result


def check_base_image(image: str, earlier_stages: set[str]) -> None:
    """A stage built on an earlier one, or an image pinned to a version (or digest)."""
    if image in earlier_stages:
        return
    if "@sha256:" in image:
        return
    _name, _, tag = image.rpartition(":") if ":" in image.split("/")[-1] else (image, "", "")
    assert tag, f"{image}: no tag, which means latest"
    assert tag != "latest", f"{image}: latest is not a pinned version"
    assert re.match(r"\d+(\.\d+)+", tag), f"{image}: the tag {tag!r} names no version"


def exec_form(arguments: str, what: str) -> list[str]:
    try:
        argv = json.loads(arguments)
    except json.JSONDecodeError:
        raise AssertionError(f"{what} is not in exec form (a JSON list): {arguments}") from None
    assert isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv), what
    return argv


def parse_headrace(argv: list[str], environment: dict[str, str] | None = None) -> Any:
    """``headrace``'s parse of ``argv`` (``argv[0]`` is ``headrace``) in a process whose
    ``HEADRACE_*`` variables are those of ``environment`` (defaults such as
    ``--bootstrap-servers``' come from them), or an AssertionError with argparse's own
    message."""
    assert argv[0] == "headrace", argv
    words = argv[1:]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), _headrace_variables(environment or {}):
            return cli._parse(cli.parser_for(words), words)
    except SystemExit:
        raise AssertionError(f"{shlex.join(argv)}: {err.getvalue().strip()}") from None


@contextlib.contextmanager
def _headrace_variables(environment: dict[str, str]) -> Iterator[None]:
    saved = {k: v for k, v in os.environ.items() if k.startswith("HEADRACE_")}
    for key in saved:
        del os.environ[key]
    os.environ.update({k: v for k, v in environment.items() if k.startswith("HEADRACE_")})
    try:
        yield
    finally:
        for key in [k for k in os.environ if k.startswith("HEADRACE_")]:
            del os.environ[key]
        os.environ.update(saved)


def headrace_commands(command: list[str]) -> Iterator[list[str]]:
    """The ``headrace`` command lines ``command`` runs: itself, or those of a ``sh -c``
    script joined with ``&&``, ``;`` or new lines."""
    if command[:2] in (["sh", "-c"], ["/bin/sh", "-c"], ["bash", "-c"]):
        assert len(command) == 3, command
        for part in re.split(r"&&|;|\n", command[2]):
            words = shlex.split(part)
            if words:
                assert words[0] == "headrace", f"the script runs {words[0]}, not headrace"
                yield words
        return
    if command and command[0] == "headrace":
        yield command


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether ``.dockerignore`` ``patterns`` leave ``path`` (relative, with ``/``)
    out of the build context: the last pattern matching it or a folder above it wins,
    a ``!`` pattern taking it back."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    verdict = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        body = pattern[1:] if negated else pattern
        body = body.strip("/")
        regex = _glob_regex(body)
        if any(regex.fullmatch(p) for p in prefixes):
            verdict = not negated
    return verdict


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out = ""
    for part in re.split(r"(\*\*/?)", pattern):
        if part in ("**", "**/"):
            out += "(?:.*/)?" if part == "**/" else ".*"
        else:
            out += (
                fnmatch.translate(part)
                .removeprefix("(?s:")
                .removesuffix(")\\Z")
                .replace(".*", "[^/]*")
            )
    return re.compile(out)


def dockerignore(context: Path) -> list[str]:
    file = context / ".dockerignore"
    if not file.exists():
        return []
    lines = (line.strip() for line in file.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def check_dockerfile(dockerfile: Path, *, needs_user: bool = True) -> list[list[str]]:
    """The checks of the module docstring; returns the headrace command line of each
    stage's CMD."""
    context = dockerfile.parent
    patterns = dockerignore(context)
    built = stages(dockerfile.read_text())
    names: set[str] = set()
    commands: list[list[str]] = []
    for stage in built:
        check_base_image(stage.image, names)
        for instruction in stage.instructions:
            if instruction.keyword in ("COPY", "ADD"):
                _check_copy(instruction, names, context, patterns)
            if instruction.keyword == "ENV":
                variables = re.findall(r"(?:^|\s)(\w+)=", instruction.arguments)
                _check_variables(f"line {instruction.line}", dict.fromkeys(variables, ""))
            if instruction.keyword in ("CMD", "ENTRYPOINT"):
                argv = exec_form(instruction.arguments, instruction.keyword)
                parse_headrace(argv)
                commands.append(argv)
        if stage.name:
            names.add(stage.name)
    final = built[-1]
    if needs_user:
        users = [i.arguments for i in final.instructions if i.keyword == "USER"]
        assert users and users[-1] not in ("root", "0"), "the final stage runs as root"
    assert any(i.keyword == "CMD" for i in final.instructions), "the final stage has no CMD"
    return commands


def _check_copy(
    instruction: Instruction, stage_names: set[str], context: Path, patterns: list[str]
) -> None:
    words = shlex.split(instruction.arguments)
    options = [w for w in words if w.startswith("--")]
    paths = [w for w in words if not w.startswith("--")]
    assert len(paths) >= 2, f"line {instruction.line}: COPY needs a source and a destination"
    source = next((o.split("=", 1)[1] for o in options if o.startswith("--from=")), None)
    if source is not None:
        assert source in stage_names, f"line {instruction.line}: no earlier stage {source}"
        return
    for src in paths[:-1]:
        if src in (".", "./"):
            continue  # the whole context: what .dockerignore leaves in
        matched = list(context.glob(src))
        assert matched, f"line {instruction.line}: {src} is not in the build context"
        for path in matched:
            relative = path.relative_to(context).as_posix()
            assert not ignored(relative, patterns), (
                f"line {instruction.line}: {relative} is left out by .dockerignore"
            )


def image_file(dockerfile: Path, image_path: str) -> Path | None:
    """The file of the build context a Dockerfile copies to ``image_path``."""
    for instruction in instructions(dockerfile.read_text()):
        if instruction.keyword == "COPY" and "--from" not in instruction.arguments:
            *sources, destination = shlex.split(instruction.arguments)
            if destination == image_path and len(sources) == 1:
                return dockerfile.parent / sources[0]
    return None


@dataclass(frozen=True)
class Listener:
    host: str
    port: int
    advertised: tuple[str, int] | None = None


def listeners(argv: list[str], properties: Path | None) -> list[Listener]:
    """The addresses a ``headrace`` command line listens on."""
    found: list[Listener] = []
    args = parse_headrace(argv)
    for flag in _LISTEN_FLAGS:
        value = getattr(args, flag.lstrip("-").replace("-", "_"), None)
        if value:
            host, _, port = value.rpartition(":")
            found.append(Listener(host, int(port)))
    if getattr(args, "http_port", None) is not None:
        found.append(Listener(args.http_host or "127.0.0.1", args.http_port))
    if getattr(args, "config", None):
        assert properties is not None, f"{args.config} is in no image"
        props = read_properties(str(properties))
        for listener in parse_listeners(
            props["listeners"],
            props.get("advertised.listeners"),
            props.get("listener.security.protocol.map"),
        ):
            found.append(Listener(listener.host, listener.port, listener.advertised()))
    return found


def check_compose(compose: Path, dockerfile: Path, image_tag: str) -> dict[str, Any]:
    """The checks of the module docstring; ``dockerfile`` is the one the image
    ``image_tag`` is built from (for the files its commands read). Returns the parsed
    file."""
    spec = yaml.safe_load(compose.read_text())
    assert isinstance(spec, dict)
    assert set(spec) <= TOP_KEYS, f"unknown top-level keys: {set(spec) - TOP_KEYS}"
    services: dict[str, Any] = spec["services"]
    declared_volumes = set(spec.get("volumes") or {})
    advertised: dict[str, set[tuple[str, int]]] = {}
    bootstraps: dict[str, list[str]] = {}
    for name, service in services.items():
        assert set(service) <= SERVICE_KEYS, f"{name}: unknown keys {set(service) - SERVICE_KEYS}"
        assert "image" in service or "build" in service, f"{name}: no image and no build"
        if "image" in service:
            assert service["image"] == image_tag, f"{name}: {service['image']}, not {image_tag}"
        environment = _environment(service)
        _check_variables(name, environment)
        command = service.get("command")
        if command is None and "build" in service:
            built = compose.parent / (
                service["build"] if isinstance(service["build"], str) else "."
            )
            commands = check_dockerfile(built / "Dockerfile", needs_user=False)
            command = commands[-1] if commands else None
        runs = list(headrace_commands(command)) if command else []
        assert command is None or isinstance(command, list), f"{name}: command in exec form"
        published = _published_ports(name, service)
        listening: list[Listener] = []
        for argv in runs:
            args = parse_headrace(argv, environment)
            properties = None
            if getattr(args, "config", None):
                properties = image_file(dockerfile, args.config)
            listening += listeners(argv, properties)
            servers = getattr(args, "bootstrap_servers", None) or environment.get(
                "HEADRACE_BOOTSTRAP_SERVERS"
            )
            if args.command == "run":
                _check_run(name, argv, environment)
            if args.command != "broker" and servers:
                bootstraps.setdefault(name, []).append(servers)
        for listener in listening:
            if listener.advertised is not None:
                advertised.setdefault(name, set()).add(listener.advertised)
        by_port = {listener.port: listener for listener in listening}
        for port in published:
            assert port in by_port, f"{name}: publishes {port}, which its command never listens on"
            assert by_port[port].host in EVERY_INTERFACE, (
                f"{name}: listens on {by_port[port].host}:{port} inside the container,"
                " which the published port cannot reach"
            )
        for dependency, condition in _depends_on(service).items():
            assert dependency in services, f"{name}: depends on no service {dependency}"
            assert condition in DEPENDS_CONDITIONS, f"{name}: {condition}"
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if not source.startswith((".", "/")):
                assert source in declared_volumes, f"{name}: volume {source} is not declared"
        healthcheck = service.get("healthcheck")
        if healthcheck is not None:
            test = healthcheck["test"]
            assert test[0] in ("CMD", "CMD-SHELL"), f"{name}: healthcheck {test}"
            if test[0] == "CMD":
                for argv in headrace_commands(test[1:]):
                    parse_headrace(argv)
    for name, addresses in bootstraps.items():
        for servers in addresses:
            for address in servers.split(","):
                host, _, number = address.rpartition(":")
                assert host in services, f"{name}: bootstrap {address} names no service"
                assert (host, int(number)) in advertised.get(host, set()), (
                    f"{name}: {address} is not an address {host} advertises:"
                    f" {sorted(advertised.get(host, set()))}"
                )
    return spec


def _environment(service: dict[str, Any]) -> dict[str, str]:
    environment = service.get("environment") or {}
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment)
    return {str(k): str(v) for k, v in environment.items()}


def _check_variables(name: str, environment: dict[str, str]) -> None:
    settings = {"HEADRACE_" + field.upper() for field in AppSettings.model_fields}
    for key in environment:
        if key.startswith("HEADRACE_"):
            assert key in settings | OTHER_VARIABLES, f"{name}: {key} is no headrace variable"


def _check_run(name: str, argv: list[str], environment: dict[str, str]) -> None:
    """The settings of a ``headrace run`` service are valid ones."""
    args = parse_headrace(argv)
    AppSettings.load(
        None,
        environment,
        application_id=args.application_id or environment.get("HEADRACE_APPLICATION_ID") or name,
        http_port=args.http_port,
        http_host=args.http_host,
    )


def _published_ports(name: str, service: dict[str, Any]) -> list[int]:
    ports: list[int] = []
    for entry in service.get("ports", []):
        assert isinstance(entry, str), f"{name}: write ports as HOST_IP:HOST_PORT:PORT"
        host_ip, _, rest = entry.partition(":")
        assert host_ip == "127.0.0.1", f"{name}: {entry} is published beyond this machine"
        _host_port, _, container_port = rest.partition(":")
        assert container_port, f"{name}: {entry} names no host port"
        ports.append(int(container_port.split("/")[0]))
    return ports


def _depends_on(service: dict[str, Any]) -> dict[str, str]:
    depends = service.get("depends_on") or {}
    if isinstance(depends, list):
        return dict.fromkeys(depends, "service_started")
    return {k: (v or {}).get("condition", "service_started") for k, v in depends.items()}


def created_topics(service: dict[str, Any]) -> set[str]:
    """The topics a service's ``headrace topics create`` commands create."""
    environment = _environment(service)
    found: set[str] = set()
    for argv in headrace_commands(service["command"]):
        args = parse_headrace(argv, environment)
        if args.command == "topics" and args.action == "create":
            found.add(args.topic)
    return found


def user_topics(topology: Any) -> set[str]:
    """The topics a topology reads and writes that its application does not create
    (every topic but its repartition topics and changelogs)."""
    topics: set[str] = set()
    for node in topology.nodes.values():
        topics.update(getattr(node, "topics", None) or ())
        if isinstance(getattr(node, "topic", None), str):
            topics.add(node.topic)
    return topics - set(topology.internal_topics)
