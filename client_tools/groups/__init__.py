"""``headrace groups``: consumer groups (classic and KIP-848) and share groups, as a client.

``GroupAdminClient`` asks any Kafka-protocol broker (FindCoordinator, then the group's
coordinator) with kio; a refusal is an ``AdminRequestError`` carrying Kafka's code.
``decode_assignment`` reads a consumer-protocol assignment.
"""

from ._admin_client import AdminRequestError as AdminRequestError
from ._admin_client import GroupAdminClient as GroupAdminClient
from ._commands import decode_assignment as decode_assignment
from ._commands import register as register

__all__ = ["AdminRequestError", "GroupAdminClient", "decode_assignment", "register"]
