"""Client telemetry (KIP-714): client instances, their subscriptions and the metrics they push.

As Kafka's ClientMetricsManager: a client instance is matched against every CLIENT_METRICS subscription
when first seen and again after the subscriptions change; its metric prefixes are the union of the
matching ones (``*`` alone when one asks for every metric), its push interval the smallest (else 5
minutes), its subscription id a CRC32C of both XORed with the instance id's hash. Where Kafka hands
pushed metrics to an exporter plugin, this broker keeps them: ``Telemetry.pushes()`` (what
``Cluster.telemetry()`` returns).

Each broker has its own client instances, as each Kafka broker's ClientMetricsManager has its own cache: at
most ``MAX_INSTANCES`` (least recently used first out), each forgotten ``max(CACHE_EXPIRY_MS, 3 × its push
interval)`` after its last request and when the connection that created it closes. A request naming a
forgotten instance makes a new one, matched afresh, with a new throttling state: its subscription id is the
same while the subscriptions are (the formula depends on nothing else), so a push to another broker or after
the expiry is taken, and after a change of the subscriptions it is UNKNOWN_SUBSCRIPTION_ID, whereupon the
client asks for its subscription again.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from kcodec.errors import ErrorCode
from kcodec.records import CodecError, Compression, crc32c, decompress

from .client_metrics import ALL_METRICS, INTERVAL_MS_DEFAULT, ClientMetricsResources
from .otlp import metric_names

# What GetTelemetrySubscriptions offers, in Kafka's order of preference (clients take the first they have).
ACCEPTED_COMPRESSION = (Compression.ZSTD, Compression.LZ4, Compression.GZIP, Compression.SNAPPY)
DEFAULT_TELEMETRY_MAX_BYTES = 1024 * 1024  # Kafka's telemetry.max.bytes
MAX_INSTANCES = 16384  # Kafka's cache of client instances per broker
CACHE_EXPIRY_MS = 60_000  # Kafka's shortest life of an unused client instance (else three push intervals)
MAX_PUSHES_PER_INSTANCE = 1000  # what is kept of one instance's pushes, the newest
RESERVED_IDS = (uuid.UUID(int=0), uuid.UUID(int=1))  # Kafka's Uuid.RESERVED: never a client instance


class TelemetryError(Exception):
    """A refused telemetry request: Kafka's error code and message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class TelemetryPush:
    """One PushTelemetry a broker accepted with metrics in it."""

    client_instance_id: uuid.UUID
    subscription_id: int
    compression_type: int
    terminating: bool
    raw: bytes        # the metrics as sent (compressed with ``compression_type``)
    metrics: bytes    # decompressed: an OTLP MetricsData protobuf
    client_id: str
    node_id: int      # the broker it was pushed to
    time: float       # time.time() when it arrived

    def metric_names(self) -> list[str]:
        """The names of the pushed metrics (``otlp.metric_names``; OtlpError if ``metrics`` is not OTLP)."""
        return metric_names(self.metrics)


def _java_uuid_hash(u: uuid.UUID) -> int:
    """Kafka's Uuid.hashCode(): the two halves XORed, folded into a signed int."""
    h = (u.int >> 64) ^ (u.int & (1 << 64) - 1)
    return ((h >> 32) ^ h) & 0xFFFFFFFF


def subscription_id(metrics: list[str], interval_ms: int, instance: uuid.UUID) -> int:
    """CRC32C of the metric list and interval, XORed with the instance id's hash, as a signed int32."""
    crc = crc32c(f"[{', '.join(metrics)}]{interval_ms}".encode())
    value = (crc ^ _java_uuid_hash(instance)) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


@dataclass
class ClientInstance:
    """What the broker knows of one client instance: how it matched, and when it last asked and pushed."""

    instance_id: uuid.UUID
    attributes: Mapping[str, Optional[str]]  # the match selectors' values, from its first request
    subscriptions_version: int
    metrics: list[str]
    interval_ms: int
    subscription_id: int
    last_get_ms: Optional[float] = None  # None: never
    last_push_ms: Optional[float] = None
    terminating: bool = False
    last_error: ErrorCode = ErrorCode.NONE
    expires_ms: float = 0.0  # forgotten from then on, unless asked about again


class Telemetry:
    """Each broker's client instances, and what every broker was pushed (the cluster state's lock guards it,
    as the handlers hold it)."""

    def __init__(self, resources: ClientMetricsResources, max_bytes: int = DEFAULT_TELEMETRY_MAX_BYTES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.resources = resources
        self.max_bytes = max_bytes
        self.clock = clock  # seconds; tests may replace it
        self._instances: dict[int, OrderedDict[uuid.UUID, ClientInstance]] = {}  # node id: its cache, LRU first
        self._pushes: OrderedDict[uuid.UUID, list[TelemetryPush]] = OrderedDict()  # what the exporter received
        self._connections: dict[tuple[int, int], uuid.UUID] = {}  # (node id, connection): the instance made on it

    def _now_ms(self) -> float:
        return self.clock() * 1000.0

    def _evaluate(self, instance_id: uuid.UUID, attributes: Mapping[str, Optional[str]]) -> ClientInstance:
        metrics: set[str] = set()
        interval = INTERVAL_MS_DEFAULT
        for sub in self.resources.subscriptions():
            if sub.matches(attributes):
                metrics |= sub.metrics
                interval = min(interval, sub.interval_ms)
        listed = [ALL_METRICS] if ALL_METRICS in metrics else sorted(metrics)
        return ClientInstance(instance_id, attributes, self.resources.version, listed, interval,
                              subscription_id(listed, interval, instance_id))

    def instance(self, node_id: int, instance_id: uuid.UUID, attributes: Mapping[str, Optional[str]],
                 connection: int) -> ClientInstance:
        """Broker ``node_id``'s instance (re-evaluated if the subscriptions changed since), or a new one (none
        known, or expired), which, as Kafka's, belongs to the ``connection`` it was made on. Either way it
        lives on for max(CACHE_EXPIRY_MS, 3 push intervals)."""
        cache = self._instances.setdefault(node_id, OrderedDict())
        now = self._now_ms()
        known = cache.get(instance_id)
        if known is None or known.expires_ms <= now:
            known = self._evaluate(instance_id, {**attributes, "client_instance_id": str(instance_id)})
            self._connections[(node_id, connection)] = instance_id
        elif known.subscriptions_version < self.resources.version:
            known = self._evaluate(instance_id, known.attributes)
            self._connections[(node_id, connection)] = instance_id
        known.expires_ms = now + max(CACHE_EXPIRY_MS, 3 * known.interval_ms)
        cache[instance_id] = known
        cache.move_to_end(instance_id)
        while len(cache) > MAX_INSTANCES:
            cache.popitem(last=False)
        return known

    def disconnected(self, node_id: int, connection: int) -> None:
        """A connection to broker ``node_id`` closed: the instance made on it is forgotten (Kafka's
        ConnectionDisconnectListener)."""
        instance_id = self._connections.pop((node_id, connection), None)
        cache = self._instances.get(node_id)
        if instance_id is not None and cache is not None:
            cache.pop(instance_id, None)

    def known(self, node_id: int) -> list[uuid.UUID]:
        """The client instances broker ``node_id`` holds, least recently used first (expired ones included
        until a request names them again)."""
        return list(self._instances.get(node_id) or ())

    def new_instance_id(self, node_id: int) -> uuid.UUID:
        cache: Mapping[uuid.UUID, ClientInstance] = self._instances.get(node_id) or {}
        while True:
            candidate = uuid.uuid4()
            if candidate not in cache and candidate not in RESERVED_IDS:
                return candidate

    def get_subscriptions(self, node_id: int, requested: uuid.UUID, attributes: Mapping[str, Optional[str]],
                          connection: int) -> ClientInstance:
        """GetTelemetrySubscriptions to broker ``node_id`` on ``connection``: the instance (a new id for the
        zero uuid); asking again before the push interval is THROTTLING_QUOTA_EXCEEDED unless the last push
        failed on its subscription id or compression."""
        instance_id = requested if requested != RESERVED_IDS[0] else self.new_instance_id(node_id)
        inst = self.instance(node_id, instance_id, attributes, connection)
        now = self._now_ms()
        last = max((t for t in (inst.last_get_ms, inst.last_push_ms) if t is not None), default=None)
        if last is None or now - last >= inst.interval_ms:
            inst.last_get_ms = now
        elif inst.last_error not in (ErrorCode.UNKNOWN_SUBSCRIPTION_ID, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE):
            raise TelemetryError(ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                                 f"Request from the client [{requested}] arrived before the next push interval time")
        inst.last_error = ErrorCode.NONE
        return inst

    def push(self, instance_id: uuid.UUID, attributes: Mapping[str, Optional[str]], subscription: int,
             terminating: bool, compression: int, data: bytes, node_id: int, connection: int) -> None:
        """PushTelemetry, checked in Kafka's order: a reserved instance id, a push after a terminating one,
        too early (a terminating push never is), the subscription id, the compression type, the size;
        then the metrics are decompressed and kept (a payload that does not decompress: INVALID_RECORD)."""
        if instance_id in RESERVED_IDS:
            raise TelemetryError(ErrorCode.INVALID_REQUEST,
                                 f"Invalid request from the client [{instance_id}], invalid client instance id")
        inst = self.instance(node_id, instance_id, attributes, connection)
        try:
            self._check_push(inst, subscription, terminating, compression, data)
        except TelemetryError as e:
            inst.last_error = e.code
            raise
        finally:
            inst.terminating = terminating
        if data:
            try:
                metrics = decompress(compression, data, self.max_bytes) if compression else bytes(data)
            except CodecError as e:  # past the cap (kcodec.records says "over the limit") or not decompressible
                code = ErrorCode.TELEMETRY_TOO_LARGE if "over the limit" in str(e) else ErrorCode.INVALID_RECORD
                inst.last_error = code
                raise TelemetryError(code, f"metrics from client instance {instance_id} rejected: {e}") from None
            kept = self._pushes.setdefault(instance_id, [])
            kept.append(TelemetryPush(instance_id, subscription, compression, terminating, bytes(data), metrics,
                                      str(attributes.get("client_id") or ""), node_id, time.time()))
            del kept[:-MAX_PUSHES_PER_INSTANCE]
            self._pushes.move_to_end(instance_id)
            while len(self._pushes) > MAX_INSTANCES:
                self._pushes.popitem(last=False)
        inst.last_error = ErrorCode.NONE

    def _check_push(self, inst: ClientInstance, subscription: int, terminating: bool, compression: int,
                    data: bytes) -> None:
        who = inst.instance_id
        if inst.terminating:
            raise TelemetryError(ErrorCode.INVALID_REQUEST, f"Client [{who}] sent the previous request with state "
                                                            "terminating to TRUE, can not accept any requests after that")
        now = self._now_ms()
        last_get, last_push = inst.last_get_ms, inst.last_push_ms
        if last_push is None or (last_get is not None and last_get > last_push) or now - last_push >= inst.interval_ms:
            inst.last_push_ms = now  # the first push after a Get may come early: clients jitter the interval
        elif not terminating:
            raise TelemetryError(ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                                 f"Request from the client [{who}] arrived before the next push interval time")
        if subscription != inst.subscription_id:
            raise TelemetryError(ErrorCode.UNKNOWN_SUBSCRIPTION_ID, f"Unknown client subscription id for the client [{who}]")
        if compression not in tuple(Compression):
            raise TelemetryError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                                 f"Unknown compression type [{compression}] is received in telemetry request from [{who}]")
        if len(data) > self.max_bytes:
            raise TelemetryError(ErrorCode.TELEMETRY_TOO_LARGE, f"Telemetry request from [{who}] is larger than the "
                                                                f"maximum allowed size [{self.max_bytes}]")

    def pushes(self) -> dict[uuid.UUID, list[TelemetryPush]]:
        """{client instance id: its accepted pushes with metrics to any broker, oldest first}: what Kafka's
        exporter plugin would have been handed (kept past the instances' expiry, for the last
        ``MAX_INSTANCES`` instances that pushed)."""
        return {i: list(kept) for i, kept in self._pushes.items()}
