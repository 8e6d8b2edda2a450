"""The web console: a cluster's brokers, topics, messages and consumer groups, and the
running applications' tasks, stores and topologies, in a browser.

It is a client of any Kafka-compatible cluster (everything it shows is read through
the Kafka protocol) and of the applications' own HTTP endpoints. ``headrace console``
runs it; ``headrace broker --console-listen`` runs it beside the built-in broker.
"""

from ._web import Console

__all__ = ["Console"]
