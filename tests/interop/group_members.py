"""A consumer group scenario any client plays: members join, one more joins, one leaves, each consuming and
committing; then a restarted member resumes from the committed offsets.

Each blocking client's member runs in its own thread (as applications run them: a consumer polled by
one thread; polling several from one thread starves the ones waiting in a rebalance). The client
specifics come in a ``Driver``: make a subscribed consumer, poll it for (partition, value) records,
commit what was consumed, close it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from confluent_kafka import Producer

from kcodec_broker import Cluster

TOPIC, PARTITIONS = "events", 6
TIMEOUT = 30.0


class Driver(Protocol):
    def open(self, cluster: Cluster, name: str, group: str) -> Any: ...
    def poll(self, consumer: Any) -> list[tuple[int, bytes]]: ...
    def assignment(self, consumer: Any) -> list[int]: ...
    def commit(self, consumer: Any) -> None: ...
    def close(self, consumer: Any) -> None: ...


@dataclass
class Member:
    """One consumer polled by its own thread until ``stop``; what it got and holds, for the test."""

    driver: Driver
    cluster: Cluster
    name: str
    group: str
    assigned: list[int] = field(default_factory=list)
    values: list[bytes] = field(default_factory=list)
    error: list[BaseException] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"member-{self.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            consumer = self.driver.open(self.cluster, self.name, self.group)
            try:
                while not self._stop.is_set():
                    got = self.driver.poll(consumer)
                    if got:
                        self.driver.commit(consumer)  # at least once: commit after processing
                    with self._lock:
                        self.values.extend(v for _, v in got)
                        self.assigned = sorted(self.driver.assignment(consumer))
            finally:
                self.driver.close(consumer)  # a clean close leaves the group: the others rebalance
        except BaseException as e:  # reported by the test, not lost in a thread
            self.error.append(e)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT)
        assert not self._thread.is_alive(), f"member {self.name} did not stop"
        assert not self.error, self.error

    def snapshot(self) -> tuple[list[int], list[bytes]]:
        with self._lock:
            return list(self.assigned), list(self.values)


def until(done: Callable[[], bool], what: str, members: list[Member] = ()) -> None:  # type: ignore[assignment]
    deadline = time.monotonic() + TIMEOUT
    while not done():
        for m in members:
            assert not m.error, f"member {m.name}: {m.error}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}: " + \
            ", ".join(f"{m.name} holds {m.snapshot()[0]}" for m in members)
        time.sleep(0.05)


def share_all(members: list[Member]) -> bool:
    """Every partition held by exactly one of these members, each holding some."""
    held = [m.snapshot()[0] for m in members]
    return sorted(p for h in held for p in h) == list(range(PARTITIONS)) and all(held)


def produce(cluster: Cluster, values: list[bytes]) -> None:
    """Round-robin over the partitions, acks=all."""
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 2})
    for i, v in enumerate(values):
        p.produce(TOPIC, v, partition=i % PARTITIONS)
    assert p.flush(TIMEOUT) == 0


def consumed(members: list[Member]) -> set[bytes]:
    return {v for m in members for v in m.snapshot()[1]}


def play(driver: Driver, cluster: Cluster, group: str) -> dict[str, Any]:
    """The scenario; returns what the test checks beyond its own assertions."""
    cluster.create_topic(TOPIC, PARTITIONS, 2)
    batches = [[f"{group}-{b}-{i}".encode() for i in range(24)] for b in range(4)]
    a, b = Member(driver, cluster, "a", group), Member(driver, cluster, "b", group)
    members = [a, b]
    try:
        until(lambda: share_all([a, b]), "a and b to share the partitions", members)
        produce(cluster, batches[0])
        until(lambda: consumed(members) >= set(batches[0]), "the first batch", members)
        c = Member(driver, cluster, "c", group)  # a third member joins: a rebalance over three
        members.append(c)
        until(lambda: share_all([a, b, c]), "the rebalance over three members", members)
        produce(cluster, batches[1])
        until(lambda: consumed(members) >= set(batches[1]), "the second batch", members)
        a.stop()  # one leaves: b and c take its partitions
        until(lambda: share_all([b, c]), "the rebalance after a left", members)
        produce(cluster, batches[2])
        until(lambda: consumed(members) >= set(batches[2]), "the third batch", members)
    finally:
        for m in members:
            if m._thread.is_alive():
                m.stop()
    produce(cluster, batches[3])  # while the group is empty
    d = Member(driver, cluster, "d", group)  # a restart: resumes from the committed offsets
    try:
        until(lambda: consumed([d]) >= set(batches[3]), "the restarted member to read the fourth batch", [d])
        time.sleep(0.3)  # anything read again would arrive by now
    finally:
        d.stop()
    classic, kip848 = cluster.runtime.groups.get(group), cluster.runtime.groups.consumer.groups.get(group)
    generation = classic.generation if classic is not None else kip848.epoch if kip848 is not None else None
    return {"restarted": d.snapshot()[1], "fourth": batches[3], "generation": generation,
            "committed": {p: c.offset for (t, p), c in cluster.state.offsets.of(group).items() if t == TOPIC}}
