"""``Cluster``: N advertised brokers on 127.0.0.1 in one process, one state, as a context manager.

    with Cluster(brokers=3) as c:            # a background thread runs the event loop
        admin = AdminClient({"bootstrap.servers": c.bootstrap})

    async with Cluster(brokers=3) as c:      # or the caller's own event loop
        ...
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
from collections import Counter
from typing import Any, Iterable, Optional, Sequence

from kcodec.security.tls import ClientAuth, PathLike, ServerTls

from . import client_metrics
from .acl import Acl, AclLike, Authorizer
from .context import DEFAULT_FETCH_MAX_BYTES, DEFAULT_SASL_MAX_RECEIVE_SIZE, ClusterRuntime
from .listeners import ClusterSecurity, Listener
from .mechanisms import DEFAULT_MECHANISMS
from .groups import GroupSettings
from .txn import TransactionSettings
from .log import DEFAULT_MAX_PARTITION_BYTES, DEFAULT_PRODUCER_ID_EXPIRATION_MS
from .copies import DEFAULT_REPLICA_LAG_TIME_MAX_MS
from .isr import run_isr_expiration, shrink_isr
from .faults import InterceptFn, Interceptor, api_key_of, dropping, failing
from .replicas import replica_selector as selector_class
from .server import BrokerServer
from .state import ClusterState
from .topic import Topic
from .telemetry import DEFAULT_TELEMETRY_MAX_BYTES, TelemetryPush

log = logging.getLogger("kcodec_broker")


class Cluster:
    """A Kafka cluster for tests, speaking the real protocol for topic administration.

    brokers: how many brokers (node ids first_node_id, first_node_id + 1, ...), each on its own port.
    port: the first broker's port; the others follow it. 0 (the default) gives every broker an
        ephemeral port.
    num_partitions, default_replication_factor: the broker defaults KIP-464 uses for -1.
    auto_create_topics: Kafka's auto.create.topics.enable; auto_create_delay_ms: how long after the
        Metadata that asks for it an auto-created topic appears (Kafka's controller round trip, during which
        Metadata answers UNKNOWN_TOPIC_OR_PARTITION; 0, the default: at once, after that answer).
    users: {user: password} turns on SASL (then nothing but ApiVersions and the SASL exchange is served
        before authentication) with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; the broker keeps SCRAM
        credentials made from the passwords, not the passwords.
    sasl_mechanisms: the mechanisms to enable instead (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512,
        OAUTHBEARER); OAUTHBEARER accepts Kafka's unsecured JWS tokens and needs no users.
    reauth_ms: connections.max.reauth.ms (KIP-368); oauth_scope: the scope tokens must carry.
    tls: (certificate file, key file) or an ``ssl.SSLContext``: SSL (or SASL_SSL) listeners.
    tls_client_auth: Kafka's ``ssl.client.auth``: "none" (the default for files), "requested" (a client
        may present a certificate) or "required" (a handshake without one fails); a certificate must
        chain to ``tls_client_ca`` (a PEM CA bundle, Kafka's truststore). Without SASL a client with a
        certificate is ``User:`` + its subject in RFC 2253 form (``User:CN=alice,O=example``), one
        without is ``User:ANONYMOUS``; with SASL the SASL identity is the principal.
    tls_principal_rules: Kafka's ``ssl.principal.mapping.rules`` for that DN, e.g.
        ``"RULE:^CN=([^,]*),.*$/$1/L,DEFAULT"`` (``User:alice``); a DN no rule applies to is refused.
    listeners: ``Listener`` objects, each opened by every broker on a port of its own (Kafka's
        ``listeners``), e.g. ``[Listener("PLAINTEXT"), Listener("SASL_SSL", port=9094)]``: each has its
        own security protocol and may set its own TLS settings and SASL mechanisms (the ones above are the
        default); clients learn the brokers' endpoints on the listener they connected to. None (the
        default): one listener at ``port``, SSL with ``tls``, SASL with ``users`` or ``sasl_mechanisms``.
    acls: Acl objects or "USER:OPERATION:topic:NAME" / "USER:OPERATION:cluster" strings; once given
        (even ``[]``), the authorizer is on: a principal may do only what they allow and no DENY ACL
        denies (super_users everything), and CreateAcls / DeleteAcls change them at run time (with
        ``state_file``, the created ones survive restarts; the ones given here apply at every start).
        None: no authorizer, everything is allowed. allow_everyone_if_no_acl_found: Kafka's
        allow.everyone.if.no.acl.found: with the authorizer on, a resource no ACL is about is open to all.
    state_file: topics (with their partition reassignments in progress), configs and the ACLs CreateAcls
        added survive restarts there (written atomically after every change), and the data in a journal
        beside it (``FILE.data``: acks=-1 is fsynced before the answer).
    max_partition_bytes: a partition's bytes in memory at most (the oldest batches go first, like
        retention.bytes, which applies below it).
    producer_id_expiration_ms: a partition forgets an idempotent or transactional producer with no
        transaction open on it and no write newer than this (Kafka's producer.id.expiration.ms, one day).
    fetch_max_bytes: the most record bytes one Fetch response carries, whatever the request allows
        (Kafka's broker fetch.max.bytes, KIP-541, default 55 MiB); the first batch still comes whole (KIP-74).
    client_telemetry: offer KIP-714's GetTelemetrySubscriptions and PushTelemetry and keep what clients push
        (``telemetry()``). Off by default, as Kafka advertises them only with a metrics reporter that receives
        client telemetry; librdkafka then asks for subscriptions at every connection (docs/broker-telemetry.md).
        CLIENT_METRICS subscriptions can be administered either way.
    telemetry_max_bytes: the most metrics bytes one PushTelemetry may carry, compressed or not (Kafka's
        telemetry.max.bytes, 1 MiB); more is TELEMETRY_TOO_LARGE.
    racks: {node id: rack} advertised in Metadata and DescribeCluster (none by default).
    replica_selector: Kafka's replica.selector.class (KIP-392): None (the default, as Kafka's) names no
        other replica, so consumers read from leaders; ``"org.apache.kafka.common.replica.RackAwareReplicaSelector"``
        (or ``"rack-aware"``) makes a leader send a consumer whose rack_id (Fetch v11+) is another broker's
        rack to an in-sync follower there (``preferred_read_replica``); ``LeaderSelector`` (``"leader"``) is
        Kafka's explicit leader-only one. Followers serve consumers' Fetch v11+ either way, as Kafka's do
        (docs/broker-followers.md); ``fetched_batches()`` tells which broker served whom.
    forward_admin: True (the default) lets any broker take CreateTopics, DeleteTopics,
        CreatePartitions, ElectLeaders and the partition reassignment requests, as KRaft brokers forward them
        to the controller; False makes the other brokers answer NOT_CONTROLLER, as ZooKeeper-era Kafka did.
    groups: the consumer groups' settings (``GroupSettings``: session timeout bounds, the initial
        rebalance delay, a group size limit).
    auto_leader_rebalance: True (the default): a partition's first live replica leads, so leadership
        returns to a broker the moment it starts again (Kafka's auto.leader.rebalance.enable, without its
        wait). False: leaders and ISRs are kept as Kafka's controller keeps them: a returning broker
        rejoins the ISR as a follower until a preferred leader election (ElectLeaders) moves leadership
        back, and a partition whose last in-sync replica stopped stays offline until it returns or an
        unclean election. With ``state_file``, leaders, ISRs and leader epochs are saved with the topics, so
        a restarted cluster goes on from them (with True, its saved leaders stand until the first broker
        stop or start after its own start, or a preferred election: docs/broker-leaders.md, "Leader epochs").
    replica_lag_time_max_ms: Kafka's replica.lag.time.max.ms (30 s): a follower that stopped copying
        (``pause_replication``) leaves the ISR once it has lagged this long; the leaders check every half of
        it, or at ``check_isr()`` (docs/broker-isr.md). ``state.clock`` (ms) is what the lag is measured on.
    transactions: the transaction coordinator's settings (``TransactionSettings``: the longest
        transaction timeout a producer may ask for, 900000 ms by default; the finalized transaction
        version, 2 by default; two-phase commit, off by default).

    Topology changes for tests (see docs/client.md): ``move_controller``, ``stop_broker`` /
    ``start_broker`` / ``restart_broker`` (same port), ``pause_replication`` / ``resume_replication`` (a
    follower that lags out of the ISR), and request interceptors (``intercept``,
    ``fail_next``, ``drop_next``) that make a broker answer an error or hang up.
    """

    def __init__(self, brokers: int = 1, *, host: str = "127.0.0.1", port: int = 0,
                 advertised_host: Optional[str] = None, first_node_id: int = 1, num_partitions: int = 1,
                 default_replication_factor: int = 1, auto_create_topics: bool = True,
                 auto_create_delay_ms: int = 0,
                 users: Optional[dict[str, str]] = None, acls: Optional[Iterable[AclLike]] = None,
                 super_users: Iterable[str] = (), allow_everyone_if_no_acl_found: bool = False,
                 state_file: Optional[os.PathLike[str] | str] = None,
                 sasl_mechanisms: Optional[Iterable[str]] = None, reauth_ms: Optional[int] = None,
                 oauth_scope: Iterable[str] = (), tls: Optional[ServerTls] = None,
                 tls_client_auth: Optional[ClientAuth] = None, tls_client_ca: Optional[PathLike] = None,
                 tls_principal_rules: Optional[str] = None, listeners: Optional[Sequence[Listener]] = None,
                 system_topic_partitions: int = 50, max_partitions_per_topic: int = 10_000,
                 max_frame_size: int = 8 * 1024 * 1024, sasl_max_receive_size: int = DEFAULT_SASL_MAX_RECEIVE_SIZE,
                 idle_timeout: float = 600.0, forward_admin: bool = True,
                 racks: Optional[dict[int, str]] = None, groups: Optional[GroupSettings] = None,
                 max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES,
                 producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
                 transactions: Optional[TransactionSettings] = None,
                 fetch_max_bytes: int = DEFAULT_FETCH_MAX_BYTES, auto_leader_rebalance: bool = True,
                 telemetry_max_bytes: int = DEFAULT_TELEMETRY_MAX_BYTES, client_telemetry: bool = False,
                 replica_selector: Optional[str] = None,
                 replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS) -> None:
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        if fetch_max_bytes < 1024:
            raise ValueError("fetch_max_bytes must be at least 1024 (as Kafka's fetch.max.bytes)")
        if telemetry_max_bytes < 1:
            raise ValueError("telemetry_max_bytes must be positive")
        if max_partition_bytes < 1:
            raise ValueError("max_partition_bytes must be positive")
        if producer_id_expiration_ms < 1:
            raise ValueError("producer_id_expiration_ms must be positive")
        if sasl_max_receive_size < 1:
            raise ValueError("sasl_max_receive_size must be positive")
        if replica_lag_time_max_ms < 1:
            raise ValueError("replica_lag_time_max_ms must be positive")
        if listeners is None and tls is None and (tls_client_auth not in (None, "none") or tls_client_ca is not None
                                                  or tls_principal_rules is not None):
            raise ValueError("TLS client authentication needs tls= (the broker's certificate and key)")
        self.host, self.port, self.advertised_host = host, port, advertised_host
        state = ClusterState(list(range(first_node_id, first_node_id + brokers)), num_partitions=num_partitions,
                             default_replication_factor=default_replication_factor,
                             auto_create_topics=auto_create_topics, state_file=state_file,
                             system_topic_partitions=system_topic_partitions,
                             max_partitions_per_topic=max_partitions_per_topic,
                             max_partition_bytes=max_partition_bytes,
                             producer_id_expiration_ms=producer_id_expiration_ms,
                             auto_leader_rebalance=auto_leader_rebalance)
        state.replica_lag_time_max_ms = replica_lag_time_max_ms
        if users:
            with state.lock:
                state.credentials.add_passwords(users)
                state.save()
        if sasl_mechanisms is None:
            sasl_mechanisms = DEFAULT_MECHANISMS if users is not None else ()
        security = ClusterSecurity(tls, tls_client_auth, tls_client_ca, tls_principal_rules,
                                   tuple(dict.fromkeys(sasl_mechanisms)), reauth_ms, tuple(oauth_scope))
        self.listeners = list(listeners) if listeners is not None else [security.default_listener(port)]
        resolved = security.resolve(self.listeners)
        authorizer = Authorizer(acls, super_users, state.created_acls,  # CreateAcls' ACLs live in the state
                                allow_if_no_acl=allow_everyone_if_no_acl_found)
        self.runtime = ClusterRuntime(state, authorizer, max_frame_size=max_frame_size,
                                      sasl_max_receive_size=sasl_max_receive_size,
                                      idle_timeout=idle_timeout, forward_admin=forward_admin,
                                      auto_create_delay_ms=auto_create_delay_ms,
                                      group_settings=groups or GroupSettings(),
                                      transaction_settings=transactions or TransactionSettings(),
                                      fetch_max_bytes=fetch_max_bytes, telemetry_max_bytes=telemetry_max_bytes,
                                      client_telemetry=client_telemetry, listeners=tuple(resolved),
                                      replica_selector=selector_class(replica_selector))
        racks = dict(racks or {})
        if set(racks) - set(state.broker_ids):
            raise ValueError(f"racks for brokers this cluster lacks: {sorted(set(racks) - set(state.broker_ids))}")
        self.servers = [BrokerServer(node_id, self.runtime, resolved, racks.get(node_id)) for node_id in state.broker_ids]
        self._thread: Optional[threading.Thread] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stopped: Optional[asyncio.Event] = None
        self._isr_task: Optional[asyncio.Task[None]] = None

    # -- what tests use ----------------------------------------------------------------------------------
    @property
    def state(self) -> ClusterState:
        return self.runtime.state

    @property
    def addresses(self) -> list[tuple[str, int]]:
        """Each broker's (host, port) on the first listener."""
        return [(s.host, s.port) for s in self.servers]

    def listener_addresses(self, listener: str) -> list[tuple[str, int]]:
        """Each running broker's (host, port) on the listener of that name (KeyError: no such listener)."""
        if listener not in {lst.name for lst in self.listeners}:
            raise KeyError(f"no listener {listener!r}; this cluster has {[lst.name for lst in self.listeners]}")
        return [s.endpoints[listener] for s in self.servers if listener in s.endpoints]

    def bootstrap_for(self, listener: str) -> str:
        """``host:port,...`` of every broker on the listener of that name."""
        return ",".join(f"{h}:{p}" for h, p in self.listener_addresses(listener))

    @property
    def security_protocol(self) -> str:
        """PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL: what clients of the first listener must set."""
        return self.servers[0].security_protocol

    @property
    def tls_client_auth(self) -> str:
        """none, requested or required: what the first listener asks of clients (Kafka's ssl.client.auth)."""
        return self.servers[0].client_auth

    @property
    def bootstrap(self) -> str:
        """``host:port,host:port,...`` of every broker on the first listener, for clients' bootstrap servers."""
        return ",".join(f"{h}:{p}" for h, p in self.addresses)

    def api_versions_used(self) -> dict[str, dict[str, list[int]]]:
        """{client software name or client id: {API name: [versions]}} of every request served."""
        return self.runtime.usage.snapshot()

    def requests_served(self) -> dict[str, Counter[tuple[str, int]]]:
        """{client id of the request headers: Counter((API name, version))} of every request answered."""
        return self.runtime.usage.counts()

    def fetched_batches(self) -> dict[int, Counter[str]]:
        """{node id: Counter(client id: record batches that broker's Fetch responses carried to it)}: which
        replica served a consumer (a leader or, KIP-392, a follower)."""
        return self.runtime.usage.batches()

    def acls(self) -> list[Acl]:
        """The ACLs in force: the ones given at start and the ones CreateAcls added, less the ones
        DeleteAcls removed; none without an authorizer (saved ones then wait in the state file)."""
        with self.state.lock:
            authorizer = self.runtime.authorizer
            return list(authorizer.acls) if authorizer.enabled else []

    def telemetry(self) -> dict[uuid.UUID, list[TelemetryPush]]:
        """{client instance id: the PushTelemetry requests with metrics the brokers accepted from it, oldest
        first} (KIP-714): each push's ``raw`` bytes as sent and ``metrics``, the OTLP MetricsData protobuf
        they decompress to."""
        with self.state.lock:
            return self.runtime.telemetry.pushes()

    def set_client_metrics(self, name: str, configs: dict[str, str]) -> None:
        """Create, change (the configs replace the subscription's) or, with no configs, delete a
        CLIENT_METRICS subscription, validated as IncrementalAlterConfigs validates it (AdminError)."""
        with self.state.lock:
            self.state.set_client_metrics(name, client_metrics.validate(name, configs) if configs else {})

    def topics(self) -> dict[str, Topic]:
        with self.state.lock:
            return dict(self.state.topics)

    def create_topic(self, name: str, partitions: int = -1, replication_factor: int = -1,
                     configs: Optional[dict[str, Optional[str]]] = None) -> Topic:
        return self.state.create_topic(name, partitions, replication_factor, configs)

    # -- topology changes and faults, for tests ----------------------------------------------------------
    @property
    def controller_id(self) -> int:
        return self.state.controller_id

    def move_controller(self, node_id: Optional[int] = None) -> int:
        """Make ``node_id`` (default: the next running broker) the controller; returns its id. Clients
        see it in their next Metadata; with ``forward_admin=False`` the old one answers NOT_CONTROLLER."""
        new = self.state.move_controller(node_id)
        log.info("controller is now broker %d", new)
        return new

    def server(self, node_id: int) -> BrokerServer:
        for s in self.servers:
            if s.node_id == node_id:
                return s
        raise ValueError(f"no broker {node_id} in this cluster")

    async def stop_broker_async(self, node_id: int) -> None:
        """Stop one broker: its connections close, it leaves Metadata, its partitions lead elsewhere
        (or go offline), and a controller that stops hands over to the next running broker."""
        await self.server(node_id).stop()

    async def start_broker_async(self, node_id: int) -> None:
        """Start a stopped broker again, on the port it had."""
        server = self.server(node_id)
        await server.start([server.endpoints[lst.name] for lst in server.listeners], self.advertised_host)

    async def restart_broker_async(self, node_id: int, down: float = 0.0) -> None:
        await self.stop_broker_async(node_id)
        await asyncio.sleep(down)
        await self.start_broker_async(node_id)

    def stop_broker(self, node_id: int) -> None:
        """``stop_broker_async`` for a cluster run by ``start()`` (its own thread)."""
        self._on_loop(self.stop_broker_async(node_id))

    def start_broker(self, node_id: int) -> None:
        self._on_loop(self.start_broker_async(node_id))

    def restart_broker(self, node_id: int, down: float = 0.0) -> None:
        self._on_loop(self.restart_broker_async(node_id, down))

    def _on_loop(self, coro: Any) -> None:
        loop = self._loop
        if self._thread is None or loop is None or loop.is_closed():
            coro.close()
            raise RuntimeError("this cluster runs on the caller's event loop (or not at all): "
                               "await the *_async method instead")
        asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=30)

    def pause_replication(self, node_id: int) -> None:
        """Stop broker ``node_id``'s followers copying from their leaders, as a stalled replica fetcher:
        each keeps the copy it has, leaves the ISR once it has lagged behind its leader for
        replica.lag.time.max.ms (docs/broker-isr.md), and serves consumers that copy (docs/broker-followers.md). Leaders it holds are unaffected."""
        self.state.pause_replication(node_id, True)

    def resume_replication(self, node_id: int) -> None:
        """Let broker ``node_id``'s followers copy again: they catch up at once and rejoin the ISR."""
        self.state.pause_replication(node_id, False)

    def check_isr(self) -> bool:
        """Run the leaders' ISR check now (as every replica.lag.time.max.ms / 2): followers that have not been
        caught up for replica.lag.time.max.ms by ``state.clock`` leave the ISR. True when one left."""
        return shrink_isr(self.state)

    def intercept(self, api: int | str, fn: InterceptFn, *, node: Optional[int] = None,
                  times: Optional[int] = None) -> Interceptor:
        """Ask ``fn(node_id, request, version)`` first about every ``api`` request (to broker ``node``
        only, if given): it returns a response to send, ``faults.DROP`` to hang up, or None to let the
        broker answer. ``times``: remove it after that many answers. Returns it, for ``unintercept``."""
        return self.runtime.interceptors.add(Interceptor(api_key_of(api), fn, node, times))

    def fail_next(self, api: int | str, error: int, *, times: int = 1, node: Optional[int] = None) -> Interceptor:
        """Answer the next ``times`` ``api`` requests with ``error`` (an ErrorCode) everywhere the
        response has an error code, e.g. ``fail_next("CreateTopics", ErrorCode.NOT_CONTROLLER)``."""
        key = api_key_of(api)
        return self.intercept(key, failing(key, int(error)), node=node, times=times)

    def drop_next(self, api: int | str, *, times: int = 1, node: Optional[int] = None) -> Interceptor:
        """Close the connection instead of answering the next ``times`` ``api`` requests."""
        return self.intercept(api, dropping, node=node, times=times)

    def unintercept(self, item: Optional[Interceptor] = None) -> None:
        """Remove one interceptor, or all of them."""
        if item is None:
            self.runtime.interceptors.clear()
        else:
            self.runtime.interceptors.remove(item)

    # -- asyncio ---------------------------------------------------------------------------------------
    async def start_async(self) -> "Cluster":
        try:
            for i, server in enumerate(self.servers):
                await server.start([(lst.host or self.host, lst.port + i if lst.port else 0) for lst in self.listeners],
                                   self.advertised_host)
        except BaseException:
            await self.stop_async()
            raise
        self._isr_task = asyncio.get_running_loop().create_task(run_isr_expiration(self.state))
        return self

    async def stop_async(self) -> None:
        self.state.closing = True  # the brokers' stops are the cluster's, not leader changes to keep
        if self._isr_task is not None:
            self._isr_task.cancel()
            self._isr_task = None
        for server in self.servers:
            await server.stop()
        with self.state.lock:
            self.runtime.groups.close()
        self.state.logs.close()

    async def __aenter__(self) -> "Cluster":
        return await self.start_async()

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop_async()

    async def serve_forever(self) -> None:
        await self.start_async()
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop_async()

    # -- a background thread -----------------------------------------------------------------------------
    def start(self) -> "Cluster":
        """Run the brokers on an event loop in a daemon thread; returns once they listen."""
        if self._thread is not None:
            raise RuntimeError("this cluster is already running")
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)

            async def main() -> None:
                self._stopped = asyncio.Event()
                try:
                    await self.start_async()
                except BaseException as e:
                    failure.append(e)
                    return
                finally:
                    ready.set()
                await self._stopped.wait()
                await self.stop_async()

            try:
                loop.run_until_complete(main())
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="kcodec-broker", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        loop, stopped = self._loop, self._stopped
        if loop is not None and stopped is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stopped.set)
        self._thread.join(timeout=30)
        self._thread = None

    def __enter__(self) -> "Cluster":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
