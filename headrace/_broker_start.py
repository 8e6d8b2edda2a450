"""What `headrace broker` imports before it serves: as little as it can.

A broker killed and started again must answer its first produce quickly, and on a busy
machine every CPU second of start-up stretches to several of wall clock. Two imports
cost more than everything else the broker loads:
- the other commands' packages: the stream runtime (``headrace.streams``) brings in
  aiohttp and aiokafka, which the broker never uses, so ``broker`` registers only the
  modules that add to it (``BROKER_COMMAND_MODULES``);
- kio's phantom types import the property-testing library ``hypothesis`` whenever it is
  installed (as in a development environment), and with it pytest and trio, only to
  register test strategies for its types. ``import_kio_without_hypothesis`` imports
  kio while ``hypothesis`` is marked missing, then unmarks it, so a later ``import
  hypothesis`` in the same process still works (only kio's strategies stay
  unregistered).
"""

from __future__ import annotations

import sys
from importlib import import_module

# The modules that register `broker` or add options to it (see headrace.cli).
BROKER_COMMAND_MODULES = ("headrace.log_broker._commands", "headrace._beside_broker")

_HYPOTHESIS = "hypothesis"


def import_kio_without_hypothesis() -> None:
    """Import kio's types without ``hypothesis`` (module docstring); a no-op when
    either is imported already."""
    if "kio.static" in sys.modules or _HYPOTHESIS in sys.modules:
        return
    sys.modules[_HYPOTHESIS] = None  # type: ignore[assignment]  # import raises ImportError
    try:
        import_module("kio.static.primitive")
    finally:
        del sys.modules[_HYPOTHESIS]
