"""The schema registry in a thread of the broker's process (``headrace broker
--schema-registry-listen``, composed in ``_beside_broker``).

The registry is a Kafka client of the broker's own listener, on its own event loop,
exactly as it would run against any other cluster. It starts once the broker listens
and stops before it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import threading

log = logging.getLogger("headrace.schema_registry")
START_TIMEOUT_S = 60.0


class RegistryThread:
    def __init__(self, args: argparse.Namespace, bootstrap: str) -> None:
        from headrace.schema_registry._commands import server_from_args

        self._server = server_from_args(args, args.schema_registry_listen, bootstrap)
        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        self._thread = threading.Thread(target=self._run, name="schema-registry", daemon=True)
        self.ready = threading.Event()  # set once the registry answers at ``url``

    @property
    def url(self) -> str:
        """Where the registry answers (its real port, once ``ready``)."""
        url: str = self._server.url
        return url

    def broker_started(self, broker: object) -> None:
        """Called on the broker's loop once it listens (``log_broker._commands``)."""
        self._thread.start()

    def stop(self) -> None:
        if not self._loop.is_closed():  # a loop not yet running runs it when it starts
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread.is_alive():
            self._thread.join(30)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        except Exception:
            log.exception("the schema registry stopped")
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        deadline = self._loop.time() + START_TIMEOUT_S
        while True:  # the broker starts listening in the main thread meanwhile
            try:
                await self._server.start()
                break
            except Exception as exc:
                if self._loop.time() > deadline or self._stop.is_set():
                    raise
                log.debug("waiting for the broker: %s", exc)
                await asyncio.sleep(0.5)
        print(
            f"headrace schema registry listening on {self._server.url}", file=sys.stderr, flush=True
        )
        self.ready.set()
        try:
            await self._stop.wait()
        finally:
            await self._server.stop()
