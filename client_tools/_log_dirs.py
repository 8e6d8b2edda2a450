"""Bytes on disk per partition, for ``topics describe``: DescribeLogDirs, asked of every
broker of the cluster (``headrace.base.log_dirs``). A cluster that does not answer it
(an older or partial implementation) gives no sizes, and the command shows none rather
than failing."""

from __future__ import annotations

import argparse
import logging

from kio.serial.errors import DecodeError

from headrace.base.log_dirs import LogDirsReader

from ._common import client_security

log = logging.getLogger("headrace.cli")


async def partition_sizes(
    args: argparse.Namespace, topic: str, partitions: list[int]
) -> dict[int, int] | None:
    """Bytes per partition of ``topic``, or None when the cluster does not say."""
    try:
        async with LogDirsReader(
            args.bootstrap_servers, security=client_security(args), client_id="headrace-topics"
        ) as client:
            sizes = await client.partition_sizes({topic: partitions})
    except (OSError, ValueError, EOFError, TimeoutError, DecodeError) as error:  # not offered
        log.debug("no log directory sizes: %s", error)
        return None
    return {partition: size for (_topic, partition), size in sizes.items()}
