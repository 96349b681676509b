"""The client's view of a cluster: advertised brokers, the controller, one connection per address.

Metadata (brokers, racks, controller, cluster id) is fetched when the client connects, again before a
call is retried (something moved: a controller, a leader, a broker), and on a timer
(``metadata_max_age``). A connection that dropped is opened again when it is next needed; an address
that failed to open lately waits out its reconnect backoff (exponential, with jitter, bounded) at the
end of the line, behind the brokers that may answer now; the call decides how long to pause between
its attempts (see retry.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Optional

from kcodec.messages import MetadataRequest

from .connection import Connection
from .errors import ClientError, KafkaConnectionError
from .retry import Backoff, Deadline

log = logging.getLogger("kcodec.client")

Address = tuple[str, int]
Opener = Callable[[str, int, float], Awaitable[Connection]]  # host, port, connect timeout


def metadata_request(version: int, names: Optional[list[str]]) -> MetadataRequest:
    """Metadata for ``names`` (None: all topics; []: none, brokers only). v0 knows no null list:
    there an empty one means all topics."""
    topics = None if names is None else [MetadataRequest.Topic(name=n) for n in names]
    if version == 0 and topics is None:
        topics = []
    req = MetadataRequest(topics=topics)
    if version >= 4:
        req.allow_auto_topic_creation = False  # describing a topic must not create it
    return req


class ClusterView:
    """Brokers by node id, the controller, and the open connections (by address)."""

    def __init__(self, bootstrap: list[Address], opener: Opener, *, connect_timeout: float,
                 request_timeout: float, metadata_max_age: Optional[float],
                 reconnect_backoff: Optional[Backoff] = None) -> None:
        if metadata_max_age is not None and metadata_max_age <= 0:
            raise ValueError(f"metadata_max_age must be positive (or None: no timer), not {metadata_max_age}")
        self.bootstrap = list(bootstrap)
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.metadata_max_age = metadata_max_age
        self.nodes: dict[int, Address] = {}
        self.racks: dict[int, Optional[str]] = {}
        self.controller: Optional[int] = None
        self.cluster_id: Optional[str] = None
        self.refreshes = 0  # how many Metadata answers this view took in
        self.stale = True  # refresh before the next call
        self._open = opener
        self._refreshed_at: Optional[float] = None
        self._answered: Optional[Address] = None  # who answered the last Metadata
        self._conns: dict[Address, Connection] = {}
        self._locks: dict[Address, asyncio.Lock] = {}
        self._timer: Optional[asyncio.Task[None]] = None
        self._backoff = reconnect_backoff or Backoff()
        self._down: dict[Address, tuple[int, float]] = {}  # failed opens in a row, loop time to wait for

    @property
    def connected(self) -> bool:
        return self._refreshed_at is not None

    def connections(self) -> list[Connection]:
        return list(self._conns.values())

    # -- connections ---------------------------------------------------------------------------------
    async def connection(self, addr: Address, deadline: Deadline) -> Connection:
        """The open connection to ``addr``, or a new one (connect, negotiate, authenticate)."""
        conn = self._conns.get(addr)
        if conn is not None and not conn.closed:
            return conn
        lock = self._locks.setdefault(addr, asyncio.Lock())
        async with lock:
            conn = self._conns.get(addr)
            if conn is not None and not conn.closed:
                return conn
            if conn is not None:
                await conn.close()  # it dropped: its reader is done; release the socket
            host, port = addr
            try:  # the whole open (connect, ApiVersions, SASL) within what is left of the call
                conn = await asyncio.wait_for(self._open(host, port, deadline.cap(self.connect_timeout)),
                                              deadline.cap(self.connect_timeout + self.request_timeout))
            except (KafkaConnectionError, asyncio.TimeoutError) as e:
                failures = self._down.get(addr, (0, 0.0))[0] + 1
                self._down[addr] = (failures, asyncio.get_running_loop().time() + self._backoff.delay(failures - 1))
                if isinstance(e, KafkaConnectionError):
                    raise
                why = str(e) or "not connected within the call's deadline"  # a negotiation's own timeout says more
                raise KafkaConnectionError(f"{host}:{port}: {why}") from None
            self._down.pop(addr, None)
            self._conns[addr] = conn
            return conn

    def _by_readiness(self, addrs: list[Address]) -> list[Address]:
        """``addrs`` with those that failed to open lately (still within their reconnect backoff:
        exponential, with jitter, bounded) moved to the end: tried only when nothing else works."""
        now = asyncio.get_running_loop().time()
        return sorted(addrs, key=lambda a: a in self._down and now < self._down[a][1])

    async def admin_connection(self, deadline: Deadline) -> Connection:
        """Where admin requests go: the controller (brokers forward admin requests there anyway,
        and old ones answer NOT_CONTROLLER elsewhere), else any advertised broker. When the broker
        of choice cannot be reached, the metadata is refreshed first: the controller may have moved."""
        fresh = False
        if self.stale or self._too_old():
            await self.refresh(deadline)
            fresh = True
        failures: list[str] = []
        while True:
            for addr in self._admin_order():
                try:
                    return await self.connection(addr, deadline)
                except KafkaConnectionError as e:
                    failures.append(str(e))
                    if not fresh:
                        break
            else:
                self.stale = True
                raise KafkaConnectionError("no advertised broker reachable: " + "; ".join(failures))
            await self.refresh(deadline)
            fresh = True

    def _admin_order(self) -> list[Address]:
        order: list[Address] = []
        for node in ([self.controller] if self.controller is not None else []) + sorted(self.nodes):
            if self.nodes[node] not in order:
                order.append(self.nodes[node])
        if self._answered is not None and self._answered not in order:
            order.append(self._answered)  # a bootstrap address that advertises no broker (a proxy)
        return self._by_readiness(order)

    # -- metadata ------------------------------------------------------------------------------------
    def _too_old(self) -> bool:
        if self._refreshed_at is None:
            return True
        age = asyncio.get_running_loop().time() - self._refreshed_at
        return self.metadata_max_age is not None and age > self.metadata_max_age

    async def refresh(self, deadline: Deadline) -> None:
        """Brokers and controller from the first broker that answers Metadata: open connections
        first, then the advertised brokers, then the bootstrap addresses."""
        candidates: list[Address] = []
        for addr in [a for a, c in self._conns.items() if not c.closed] + list(self.nodes.values()) + self.bootstrap:
            if addr not in candidates:
                candidates.append(addr)
        failures = []
        for addr in self._by_readiness(candidates):
            try:
                conn = await self.connection(addr, deadline)
                version = conn.versions.require(MetadataRequest)
                meta = await conn.request(metadata_request(version, []), version,
                                          timeout=deadline.cap(self.request_timeout))
            except (KafkaConnectionError, asyncio.TimeoutError, TimeoutError) as e:
                failures.append(str(e) or type(e).__name__)
                continue
            self._take(meta, version, addr)
            return
        self.stale = True
        who = "no broker answered Metadata" if self.nodes else "no bootstrap broker answered"
        raise KafkaConnectionError(f"{who}: " + "; ".join(failures))

    def _take(self, meta: Any, version: int, addr: Address) -> None:
        self.nodes = {b.node_id: (b.host, b.port) for b in meta.brokers}
        self.racks = {b.node_id: b.rack if version >= 1 else None for b in meta.brokers}
        controller = meta.controller_id if version >= 1 else None
        if controller != self.controller and self.controller is not None:
            log.info("controller moved: %s -> %s", self.controller, controller)
        self.controller = controller if controller in self.nodes else None
        self.cluster_id = meta.cluster_id if version >= 2 else None
        self._answered = addr
        self._refreshed_at = asyncio.get_running_loop().time()
        self.refreshes += 1
        self.stale = False

    def start_timer(self) -> None:
        """Refresh every ``metadata_max_age`` seconds while the event loop runs (a SyncClient's loop
        runs only during calls: there a call finds the metadata too old and refreshes it first)."""
        if self.metadata_max_age is not None and self._timer is None:
            self._timer = asyncio.get_running_loop().create_task(self._tick(self.metadata_max_age))

    async def _tick(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            try:
                await self.refresh(Deadline(self.connect_timeout + self.request_timeout, "metadata refresh"))
            except ClientError as e:  # the next call retries; the timer keeps going
                log.info("metadata refresh failed: %s", e)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            try:
                await self._timer
            except asyncio.CancelledError:
                pass
            self._timer = None
        conns = list(self._conns.values())
        self._conns.clear()
        await asyncio.gather(*(c.close() for c in conns))
