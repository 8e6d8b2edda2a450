"""``.proto`` text to a ``FileDescriptorProto``, by protoc itself (grpcio-tools ships it).

protoc runs in a child process so its error messages (written to stderr by C++ code) can
be handed back in the 42201 answer, and a crash in it cannot take the registry down.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from google.protobuf import descriptor_pb2

from ._errors import InvalidSchema

MAIN = "schema.proto"
TIMEOUT_S = 20.0


CACHED = 256  # compiled files kept: a registration compiles off the event loop, then
# again under the write lock, which must find it here rather than run protoc twice
_compiled: dict[tuple[str, tuple[bytes, ...]], bytes] = {}
_lock = threading.Lock()


def compile_proto(
    text: str, imports: dict[str, descriptor_pb2.FileDescriptorProto]
) -> descriptor_pb2.FileDescriptorProto:
    """Compile ``text``; ``imports`` are the files it may import, by import name."""
    key = (text, tuple(f.SerializeToString(deterministic=True) for f in imports.values()))
    with _lock:
        found = _compiled.get(key)
    if found is None:
        found = _compile(text, imports).SerializeToString()
        with _lock:
            if len(_compiled) >= CACHED:
                _compiled.clear()
            _compiled[key] = found
    return descriptor_pb2.FileDescriptorProto.FromString(found)


def _compile(
    text: str, imports: dict[str, descriptor_pb2.FileDescriptorProto]
) -> descriptor_pb2.FileDescriptorProto:
    try:
        import grpc_tools
    except ImportError as exc:  # pragma: no cover - a dependency
        raise InvalidSchema("Invalid schema: .proto text needs grpcio-tools") from exc
    include = Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / MAIN).write_text(text)
        out = root / "out.pb"
        args = [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{root}",
            f"-I{include}",
            f"--descriptor_set_out={out}",
        ]
        if imports:
            # Imported files come compiled, from the references; protoc reads them as is.
            deps = root / "imports.pb"
            deps.write_bytes(
                descriptor_pb2.FileDescriptorSet(file=list(imports.values())).SerializeToString()
            )
            args.append(f"--descriptor_set_in={deps}")
        args.append(MAIN)
        try:
            done = subprocess.run(
                args, cwd=root, capture_output=True, timeout=TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise InvalidSchema("Invalid schema: protoc took too long") from exc
        if done.returncode != 0:
            lines = done.stderr.decode(errors="replace").replace(str(root) + "/", "").splitlines()
            # protoc's own log lines (absl warnings) are noise to the client; keep errors.
            message = "; ".join(line for line in lines if line.startswith(MAIN))
            raise InvalidSchema(f"Invalid schema: {message or (lines or ['protoc failed'])[-1]}")
        files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file
    return next(f for f in files if f.name == MAIN)
