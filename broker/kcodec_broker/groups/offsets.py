"""Committed consumer offsets: {group: {(topic, partition): Committed}}, saved with the state file.

Kafka keeps them in __consumer_offsets; here they are a plain map the ClusterState persists through its
atomic save, so a broker restarted on its state file serves the offsets acknowledged before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional


@dataclass(frozen=True)
class Committed:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    timestamp_ms: int = -1  # when it was committed


class CommittedOffsets:
    def __init__(self) -> None:
        self._groups: dict[str, dict[tuple[str, int], Committed]] = {}

    def __bool__(self) -> bool:
        return bool(self._groups)

    def groups(self) -> list[str]:
        return list(self._groups)

    def of(self, group: str) -> dict[tuple[str, int], Committed]:
        """The group's committed offsets (a live view: do not change it)."""
        return self._groups.get(group, {})

    def get(self, group: str, topic: str, partition: int) -> Optional[Committed]:
        return self._groups.get(group, {}).get((topic, partition))

    def commit(self, group: str, topic: str, partition: int, committed: Committed) -> None:
        self._groups.setdefault(group, {})[(topic, partition)] = committed

    def delete(self, group: str, topic: str, partition: int) -> None:
        offsets = self._groups.get(group)
        if offsets is not None:
            offsets.pop((topic, partition), None)
            if not offsets:
                del self._groups[group]

    def delete_group(self, group: str) -> None:
        self._groups.pop(group, None)

    def delete_topic(self, topic: str) -> None:
        """A deleted topic's offsets go with it (Kafka removes them from every group)."""
        for group in list(self._groups):
            for key in [k for k in self._groups[group] if k[0] == topic]:
                self.delete(group, *key)

    def __iter__(self) -> Iterator[tuple[str, str, int, Committed]]:
        for group, offsets in self._groups.items():
            for (topic, partition), c in offsets.items():
                yield group, topic, partition, c

    def to_json(self) -> list[dict[str, Any]]:
        return [{"group": g, "topic": t, "partition": p, "offset": c.offset, "leader_epoch": c.leader_epoch,
                 "metadata": c.metadata, "timestamp_ms": c.timestamp_ms} for g, t, p, c in self]

    def load_json(self, items: list[dict[str, Any]]) -> None:
        for i in items:
            self.commit(str(i["group"]), str(i["topic"]), int(i["partition"]),
                        Committed(int(i["offset"]), int(i["leader_epoch"]), str(i["metadata"]),
                                  int(i["timestamp_ms"])))
