"""The KRaft metadata quorum (``__cluster_metadata`` partition 0) as DescribeQuorum shows it.

The cluster's nodes run as combined brokers and controllers (``process.roles=broker,controller``) with a
static voter set (kraft.version 0), so every node is a voter and there are no observers. The controller
leads the quorum; its epoch starts at 1 and grows with every change of controller. The log's end offset
counts the metadata changes (a record each: topics, partitions, configs, brokers starting and stopping,
controller changes, and each change a reassignment makes to a partition, as Kafka's PartitionChangeRecord);
every running voter has fetched all of it, a stopped one keeps the offset and time it had when it
stopped, and a node that never ran has none (-1).
"""

from __future__ import annotations

import time
from typing import Mapping, NamedTuple

UNKNOWN = -1


class VoterState(NamedTuple):
    node_id: int
    log_end_offset: int
    last_fetch_ms: int
    last_caught_up_ms: int


class Quorum:
    def __init__(self) -> None:
        self.epoch = 1
        self.end_offset = 0
        self._stopped: dict[int, tuple[int, int]] = {}  # node: (end offset, time in ms) when it stopped
        self._running: set[int] = set()
        self.endpoints: dict[int, Mapping[str, tuple[str, int]]] = {}  # node: {listener: (host, port)}, last known

    def record(self) -> None:
        """One metadata record appended (and committed: every running voter has it at once)."""
        self.end_offset += 1

    def new_leader(self) -> None:
        """A new controller was elected: a new epoch, whose first record is its LeaderChangeMessage."""
        self.epoch += 1
        self.record()

    def started(self, node: int, endpoints: Mapping[str, tuple[str, int]]) -> None:
        self._running.add(node)
        self._stopped.pop(node, None)
        self.endpoints[node] = dict(endpoints)
        self.record()  # its registration

    def stopped(self, node: int) -> None:
        self.record()  # it is fenced
        self._running.discard(node)
        self._stopped[node] = (self.end_offset, int(time.time() * 1000))

    def voter(self, node: int, now_ms: int) -> VoterState:
        if node in self._running:
            return VoterState(node, self.end_offset, now_ms, now_ms)
        offset, at = self._stopped.get(node, (UNKNOWN, UNKNOWN))
        return VoterState(node, offset, at, at)
