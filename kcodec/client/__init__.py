"""kcodec.client: a small asyncio Kafka admin client built on kcodec's public API (with a sync wrapper).

    from kcodec.client import Client, NewTopic, SyncClient
    async with Client("127.0.0.1:9092", sasl_user="u", sasl_password="p") as c:
        await c.create_topics([NewTopic("orders")])   # KIP-464 broker defaults
        await c.list_topics()                         # ListTopics (KIP-142), else Metadata

Per-topic outcomes are values (``result.error`` is a ``kcodec.errors.ErrorCode``); exceptions are for
the connection, the protocol and whole-request errors.
"""

from __future__ import annotations

from .admin import Client, parse_address
from .connection import Connection
from .errors import (AuthenticationError, BrokerError, CallTimeoutError, ClientError, KafkaConnectionError,
                     ProtocolError, RequestTimeoutError, UnsupportedApiError)
from .results import (ConfigEntry, CreateTopicResult, NewTopic, PartitionInfo, TopicConfigs, TopicDescription,
                      TopicListing, TopicResult, as_json)
from .sasl import Sasl
from .sync import SyncClient

__all__ = [
    "AuthenticationError", "BrokerError", "CallTimeoutError", "Client", "ClientError", "ConfigEntry", "Connection",
    "CreateTopicResult", "KafkaConnectionError", "NewTopic", "PartitionInfo", "ProtocolError",
    "RequestTimeoutError", "Sasl", "SyncClient", "TopicConfigs", "TopicDescription", "TopicListing", "TopicResult",
    "UnsupportedApiError", "as_json", "parse_address",
]
