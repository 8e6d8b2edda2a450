"""``headrace records delete``: drop a partition's records below an offset (DeleteRecords),
as kafka-delete-records.sh. The partition's log start offset moves up; consumers that
were behind it continue from there."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import UsageError, run_client
from ._configs import open_admin
from ._topics import topic_partitions


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    records = subparsers.add_parser("records", help="delete records up to an offset")
    actions = records.add_subparsers(dest="action", metavar="ACTION", required=True)
    delete = actions.add_parser(
        "delete", parents=[broker_options], help="delete the records of a partition below an offset"
    )
    delete.add_argument("--topic", required=True)
    delete.add_argument("--partition", type=int, required=True)
    delete.add_argument(
        "--offset",
        type=int,
        required=True,
        metavar="N",
        help="records below N go; -1: every record (up to the high watermark)",
    )
    delete.set_defaults(handler=run_client(_delete))


async def _delete(args: argparse.Namespace) -> int:
    from aiokafka import TopicPartition
    from aiokafka.admin import RecordsToDelete

    admin = await open_admin(args)
    try:
        partitions = {p["partition"] for p in await topic_partitions(admin, args.topic)}
        if args.partition not in partitions:
            raise UsageError(f"topic {args.topic!r} has no partition {args.partition}")
        tp = TopicPartition(args.topic, args.partition)
        low = (await admin.delete_records({tp: RecordsToDelete(args.offset)}))[tp]
    finally:
        await admin.close()
    print(f"{args.topic} partition {args.partition}: records below offset {low} deleted")
    return 0
