"""A Kafka broker for tests: real protocol, topic administration with the seeds' semantics. The distribution
kcodec-broker, apart from the codec (kcodec), on kcodec's public API only.

    from kcodec_broker import Cluster
    with Cluster(brokers=3) as c:            # or: async with Cluster(brokers=3) as c:
        c.bootstrap                          # "127.0.0.1:41231,127.0.0.1:41232,127.0.0.1:41233"

Modules: state (topics, partitions, the rules), configs (topic configs), client_metrics, telemetry and otlp
(KIP-714: subscriptions, client instances, their pushes, metric names), acl (ACLs per principal and the authorizer),
handlers/ (one module per API family), groups/ (consumer groups' coordinator and offsets), txn/ (the
transaction coordinator), log/ (partitions' batches, producer state, the data file), listeners (each
listener's security), server (asyncio transport), cluster (the context manager), cli (``kcodec-broker``,
``kcodec broker``). Names load lazily so ``kcodec --help`` does not load the definitions.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .acl import Acl as Acl
    from .cluster import Cluster as Cluster
    from .groups import GroupSettings as GroupSettings
    from .listeners import Listener as Listener
    from .state import AdminError as AdminError, ClusterState as ClusterState
    from .topic import Topic as Topic
    from .telemetry import TelemetryPush as TelemetryPush
    from .txn import TransactionSettings as TransactionSettings

__all__ = ["Acl", "AdminError", "Cluster", "ClusterState", "GroupSettings", "Listener", "TelemetryPush", "Topic",
           "TransactionSettings"]
_WHERE = {"Acl": "acl", "Cluster": "cluster", "AdminError": "state", "ClusterState": "state", "Topic": "topic",
          "GroupSettings": "groups", "Listener": "listeners", "TelemetryPush": "telemetry",
          "TransactionSettings": "txn"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
