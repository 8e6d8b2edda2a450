"""Idempotent-producer state and the transaction coordinator (broker side, no sockets).

Imports nothing from log_broker: the broker wires these in over small interfaces.
"""

from ._producer_ids import ProducerIdAllocator as ProducerIdAllocator

__all__ = ["ProducerIdAllocator"]
