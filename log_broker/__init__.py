"""The built-in broker: speaks the Kafka wire protocol over asyncio TCP.

async with Broker(data_dir) as broker:   # port 0 (default) picks a free port
    print(broker.bootstrap_servers)
"""

from headrace.base import BrokerError as BrokerError

from ._broker import Broker as Broker
from ._config import BrokerConfig as BrokerConfig
from ._errors import FrameTooLargeError as FrameTooLargeError
from ._errors import MalformedRequestError as MalformedRequestError
from ._errors import UnsupportedRequestError as UnsupportedRequestError

__all__ = [
    "Broker",
    "BrokerConfig",
    "BrokerError",
    "FrameTooLargeError",
    "MalformedRequestError",
    "UnsupportedRequestError",
]
