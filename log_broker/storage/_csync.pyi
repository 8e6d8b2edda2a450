# The C extension built from _csync.c (see _fsyncs).

from collections.abc import Sequence

def sync(ops: Sequence[tuple[int, bool]], threads: int = 1) -> list[tuple[int, float, float]]: ...
