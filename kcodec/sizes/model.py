"""The cluster model: brokers, racks and topics, made deterministically from a seed, one topic at a time.

A cluster never holds its topics: ``topic(i)`` makes topic ``i`` from its own random stream (seed, i),
so a sweep to 100,000 topics walks them one by one, in any order (DescribeTopicPartitions pages go by
name), and the same seed always gives the same cluster.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from typing import Any, Iterator, Mapping, NamedTuple, Optional, Sequence, Union


class Broker(NamedTuple):
    node_id: int
    host: str
    port: int
    rack: Optional[str]


class Partition(NamedTuple):
    partition_index: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]


class Topic(NamedTuple):
    name: str
    topic_id: uuid.UUID
    internal: bool
    partitions: tuple[Partition, ...]


class Dist:
    """A whole-number distribution: a constant, a uniform range ``lo-hi``, or weights ``n:w,n:w``."""

    def __init__(self, spec: Union[int, tuple[int, int], Mapping[int, float], str, "Dist"]):
        if isinstance(spec, Dist):
            spec = spec.spec
        if isinstance(spec, str):
            spec = self._parse(spec)
        self.spec: Any = spec
        if isinstance(spec, bool) or not isinstance(spec, (int, tuple, dict)):
            raise ValueError(f"a distribution is an int, (lo, hi) or {{n: weight}}, not {spec!r}")
        if isinstance(spec, int):
            self.lo = self.hi = spec
        elif isinstance(spec, tuple):
            self.lo, self.hi = int(spec[0]), int(spec[1])
            if self.lo > self.hi:
                raise ValueError(f"empty range {self.lo}-{self.hi}")
        else:
            if not spec or any(w < 0 for w in spec.values()) or sum(spec.values()) <= 0:
                raise ValueError(f"weights must be non-negative and not all zero: {spec!r}")
            self._values = list(spec)
            self._weights = [float(w) for w in spec.values()]
            self.lo, self.hi = min(spec), max(spec)

    @staticmethod
    def _parse(text: str) -> Any:
        text = text.strip()
        try:
            if ":" in text:
                out: dict[int, float] = {}
                for part in text.split(","):
                    n, w = part.split(":")
                    out[int(n)] = float(w)
                return out
            if "-" in text:
                lo, hi = text.split("-", 1)
                return (int(lo), int(hi))
            return int(text)
        except ValueError:
            raise ValueError(f"not a distribution: {text!r} (use 10, 1-100 or 1:50,10:30,100:20)") from None

    def draw(self, rng: random.Random) -> int:
        if self.lo == self.hi:
            return self.lo
        if isinstance(self.spec, tuple):
            return rng.randint(self.lo, self.hi)
        return rng.choices(self._values, self._weights)[0]

    def __repr__(self) -> str:
        return f"Dist({self.spec!r})"


# Words for plausible topic names ("payments.order-created.v2"); a base-36 tag of the index makes them unique.
_PREFIXES = ("", "", "", "dev.", "stg.", "prod.", "us.", "eu.", "apac.")
_DOMAINS = ("accounts", "orders", "payments", "inventory", "shipping", "checkout", "fraud", "ledger", "search",
            "identity", "billing", "catalog", "pricing", "analytics", "notifications", "loyalty")
_ENTITIES = ("order", "session", "payment", "shipment", "customer", "device", "click", "cart", "invoice",
             "address", "subscription", "card-authorization", "refund", "chargeback", "product", "review")
_SUFFIXES = ("created", "updated", "deleted", "events", "commands", "snapshots", "cdc", "dlq", "retry",
             "compacted", "enriched", "v1", "v2", "v3")
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def _base36(i: int) -> str:
    out = ""
    while True:
        i, r = divmod(i, 36)
        out = _DIGITS[r] + out
        if not i:
            return out


def topic_name(rng: random.Random, length: int, index: int, internal: bool) -> str:
    """A name of exactly ``length`` characters, unique by index: words, then ``-<index in base 36>``."""
    tag = "-" + _base36(index)
    head = "__" if internal else rng.choice(_PREFIXES)
    words = head + rng.choice(_DOMAINS) + "." + rng.choice(_ENTITIES) + "." + rng.choice(_SUFFIXES)
    room = length - len(tag)
    while len(words) < room:
        words += "." + rng.choice(_SUFFIXES)
    words = words[:room].rstrip(".-") if room > 2 else "t" * max(room, 0)
    words += "x" * (room - len(words))
    return words + tag


class Cluster:
    """A Kafka cluster as the responses describe it: brokers, cluster id, controller, and ``len(self)`` topics."""

    brokers: tuple[Broker, ...]
    cluster_id: Optional[str]
    controller_id: int

    def __len__(self) -> int:
        raise NotImplementedError

    def name(self, i: int) -> str:
        return self.topic(i).name

    def topic(self, i: int) -> Topic:
        raise NotImplementedError

    def topics(self, order: Optional[Sequence[int]] = None) -> Iterator[Topic]:
        """Every topic, one at a time, in index order or in the order given."""
        for i in (range(len(self)) if order is None else order):
            yield self.topic(i)

    def by_name(self) -> list[int]:
        """Topic indices sorted by name, the order of DescribeTopicPartitions pages."""
        return sorted(range(len(self)), key=self.name)


@dataclasses.dataclass(frozen=True)
class SyntheticCluster(Cluster):
    """A cluster made from parameters (the defaults describe ../shared/vectors/metadata).

    ``partitions`` and ``name_lengths`` are distributions (``Dist``: 10, (1, 100) or {1: 50, 10: 30});
    ``shrunk_isr_share`` of the partitions lose one in-sync follower, ``offline_share`` have one follower
    offline (out of the ISR too); ``internal_share`` of the topics are internal (names start with ``__``).
    Replicas are placed as Kafka places them: a rack-alternating broker list, a random start and shift.
    """

    topic_count: int = 1000
    partitions: Any = 10
    replication_factor: int = 3
    broker_count: int = 6
    racks: int = 3
    name_lengths: Any = (20, 40)
    internal_share: float = 0.0
    shrunk_isr_share: float = 0.02
    offline_share: float = 0.0
    seed: int = 0
    host_pattern: str = "kafka-{i}.kafka-headless.streaming.svc.cluster.local"
    port: int = 9092
    rack_pattern: str = "us-east-1{letter}"
    cluster_id: Optional[str] = "Xt3kQ9v2RZ-4bLp0hW7c1A"
    controller_id: int = 2
    brokers: tuple[Broker, ...] = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        fix = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 (frozen dataclass)
        fix("partitions", Dist(self.partitions))
        fix("name_lengths", Dist(self.name_lengths))
        if self.topic_count < 0:
            raise ValueError("topic_count must be >= 0")
        if self.broker_count < 1 or not 1 <= self.replication_factor <= self.broker_count:
            raise ValueError(f"replication factor {self.replication_factor} needs 1 to {self.broker_count} brokers")
        if self.partitions.lo < 1:
            raise ValueError("every topic has at least one partition")
        if self.name_lengths.lo < 1 + len(_base36(max(self.topic_count - 1, 0))) + 1 or self.name_lengths.hi > 249:
            raise ValueError(f"topic names of {self.name_lengths} characters cannot be unique for "
                             f"{self.topic_count} topics (at most 249 characters)")
        for share in (self.internal_share, self.shrunk_isr_share, self.offline_share):
            if not 0.0 <= share <= 1.0:
                raise ValueError(f"a share lies in [0, 1], not {share}")
        if self.racks < 0:
            raise ValueError("racks must be >= 0")
        fix("brokers", tuple(
            Broker(i + 1, self.host_pattern.format(i=i), self.port,
                   self.rack_pattern.format(letter=_DIGITS[10 + i % self.racks % 26], n=i % self.racks)
                   if self.racks else None)
            for i in range(self.broker_count)))
        # Kafka's rack-alternating order: one broker of each rack in turn.
        by_rack: dict[Optional[str], list[int]] = {}
        for b in self.brokers:
            by_rack.setdefault(b.rack, []).append(b.node_id)
        order: list[int] = []
        lists = list(by_rack.values())
        for k in range(max(len(x) for x in lists)):
            order += [x[k] for x in lists if k < len(x)]
        fix("_placement", tuple(order))
        fix("_rack_of", {b.node_id: b.rack for b in self.brokers})
        fix("_placed", {})  # (first broker, shift mod brokers-1) -> replicas: placement depends on nothing else

    def __len__(self) -> int:
        return self.topic_count

    def with_topics(self, n: int) -> "SyntheticCluster":
        return dataclasses.replace(self, topic_count=n, partitions=self.partitions.spec,
                                   name_lengths=self.name_lengths.spec)

    def _rng(self, i: int) -> random.Random:
        return random.Random(self.seed * 1_000_003 + i)

    def _head(self, rng: random.Random, i: int) -> tuple[str, bool]:
        internal = self.internal_share > 0 and rng.random() < self.internal_share
        return topic_name(rng, self.name_lengths.draw(rng), i, internal), internal

    def name(self, i: int) -> str:
        return self._head(self._rng(i), i)[0]

    def _replicas(self, first: int, shift: int) -> tuple[int, ...]:
        """Kafka's rack-aware placement: followers walk the list from a shifted start, skipping brokers on
        racks that already hold a replica until every rack holds one."""
        brokers: tuple[int, ...] = self._placement  # type: ignore[attr-defined]
        rack_of: dict[int, Optional[str]] = self._rack_of  # type: ignore[attr-defined]
        b, racks = len(brokers), len(set(rack_of.values()))
        chosen = [brokers[first]]
        used = {rack_of[chosen[0]]}
        k = 0
        while len(chosen) < self.replication_factor:
            cand = brokers[(first + 1 + (shift + k) % (b - 1)) % b]
            k += 1
            if cand in chosen or (rack_of[cand] in used and len(used) < racks):
                continue
            chosen.append(cand)
            used.add(rack_of[cand])
        return tuple(chosen)

    def topic(self, i: int) -> Topic:
        if not 0 <= i < self.topic_count:
            raise IndexError(f"topic {i} of {self.topic_count}")
        rng = self._rng(i)
        name, internal = self._head(rng, i)
        topic_id = uuid.UUID(int=rng.getrandbits(128) | 1)
        n = self.partitions.draw(rng)
        brokers: tuple[int, ...] = self._placement  # type: ignore[attr-defined]
        b, rf = len(brokers), self.replication_factor
        start, shift = rng.randrange(b), rng.randrange(b)
        shrunk, offline_share, rand = self.shrunk_isr_share, self.offline_share, rng.random
        placed: dict[tuple[int, int], tuple[int, ...]] = self._placed  # type: ignore[attr-defined]
        parts = []
        for p in range(n):
            if p and p % b == 0:
                shift += 1
            first = (p + start) % b
            key = (first, shift % (b - 1) if b > 1 else 0)
            replicas = placed.get(key)
            if replicas is None:
                replicas = placed[key] = self._replicas(first, shift)
            isr, offline = replicas, ()  # type: tuple[int, ...], tuple[int, ...]
            if rf > 1 and offline_share and rand() < offline_share:
                offline = (replicas[1 + rng.randrange(rf - 1)],)
                isr = tuple(r for r in replicas if r != offline[0])
            if len(isr) > 1 and shrunk and rand() < shrunk:
                gone = isr[1 + rng.randrange(len(isr) - 1)]
                isr = tuple(r for r in isr if r != gone)
            parts.append(Partition(p, replicas[0], int(rand() * 64), replicas, isr, offline))
        return Topic(name, topic_id, internal, tuple(parts))


class ListedCluster(Cluster):
    """A cluster whose topics are given (for example decoded from a real Metadata response)."""

    def __init__(self, brokers: Sequence[Broker], topics: Sequence[Topic], cluster_id: Optional[str] = None,
                 controller_id: int = -1):
        self.brokers = tuple(brokers)
        self._topics = list(topics)
        self.cluster_id = cluster_id
        self.controller_id = controller_id

    def __len__(self) -> int:
        return len(self._topics)

    def topic(self, i: int) -> Topic:
        return self._topics[i]

    def name(self, i: int) -> str:
        return self._topics[i].name

    @classmethod
    def from_metadata(cls, msg: Any) -> "ListedCluster":
        """The cluster a decoded ``MetadataResponse`` describes: its brokers, ids and topics as they are."""
        brokers = [Broker(b.node_id, b.host, b.port, b.rack) for b in msg.brokers]
        topics = [Topic(t.name, t.topic_id, t.is_internal,
                        tuple(Partition(p.partition_index, p.leader_id, p.leader_epoch, tuple(p.replica_nodes),
                                        tuple(p.isr_nodes), tuple(p.offline_replicas)) for p in t.partitions))
                  for t in msg.topics]
        return cls(brokers, topics, msg.cluster_id, msg.controller_id)
