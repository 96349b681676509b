"""The asyncio admin client: bootstrap, then the advertised brokers; topic administration.

    async with Client("127.0.0.1:9092") as client:
        names = await client.list_topics()
        results = await client.create_topics([NewTopic("orders", partitions=3)])
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from kcodec import definitions
from kcodec.errors import ErrorCode
from kcodec.messages import (CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
                             DescribeConfigsRequest, DescribeTopicPartitionsRequest, ListTopicsRequest,
                             MetadataRequest, SaslAuthenticateRequest, SaslHandshakeRequest)

from kcodec.security.tls import ClientTls, client_context

from .connection import Connection
from .errors import BrokerError, KafkaConnectionError, ProtocolError, error_of
from .results import (ConfigEntry, CreateTopicResult, NewTopic, PartitionInfo, TopicConfigs, TopicDescription,
                      TopicListing, TopicResult)
from .sasl import Sasl

TOPIC_RESOURCE = 2  # DescribeConfigs resource type
KIP_464_VERSION = 4  # CreateTopics: -1 partitions / replication factor mean the broker's defaults
KIP_525_VERSION = 5  # CreateTopics: the response carries partitions, replication factor, configs
_ZERO_UUID = uuid.UUID(int=0)


def parse_address(text: str, default_port: int = 9092) -> tuple[str, int]:
    """``host:port``, ``host`` or ``[v6]:port``."""
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.lstrip(":")
    else:
        host, _, port = text.rpartition(":") if ":" in text else (text, "", "")
    if not host:
        raise ValueError(f"bad broker address {text!r}: expected HOST:PORT")
    try:
        return host, int(port) if port else default_port
    except ValueError:
        raise ValueError(f"bad port in broker address {text!r}") from None


class Client:
    """An admin client for a Kafka cluster.

    bootstrap: ``"h1:9092,h2:9092"`` or a list; tried in order until one answers.
    sasl_user / sasl_password: SASL on every connection, with ``sasl_mechanism`` (PLAIN by default,
        SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER); ``sasl``: a ready ``Sasl`` instead (OAUTHBEARER
        tokens); see kcodec.client.sasl.
    tls: TLS on every connection: True (the system's CAs), a CA file path, or an ``ssl.SSLContext``;
        the broker's certificate must name the address connected to unless ``tls_check_hostname=False``.
    list_topics_api_key: where the broker serves ListTopics (KIP-142); kcodec's default otherwise.
    max_versions: api key -> highest version to use (to pin a broker to older behaviour).
    partition_limit: DescribeTopicPartitions' page size (partitions per response).
    """

    def __init__(self, bootstrap: Union[str, Sequence[str]], *, client_id: str = "kcodec",
                 sasl_user: Optional[str] = None, sasl_password: Optional[str] = None,
                 sasl_mechanism: Optional[str] = None, sasl: Optional[Sasl] = None,
                 tls: Optional[ClientTls] = None, tls_check_hostname: bool = True,
                 request_timeout: float = 30.0, connect_timeout: float = 10.0,
                 list_topics_api_key: Optional[int] = None, max_versions: Optional[Mapping[int, int]] = None,
                 partition_limit: int = 2000) -> None:
        items = bootstrap.split(",") if isinstance(bootstrap, str) else list(bootstrap)
        self.bootstrap = [parse_address(a) for a in items if a.strip()]
        if not self.bootstrap:
            raise ValueError("no bootstrap address given")
        if sasl is None and (sasl_user is not None or sasl_password is not None or sasl_mechanism is not None):
            sasl = Sasl(sasl_mechanism or "PLAIN", sasl_user, sasl_password)
        self.sasl = sasl
        self.tls = client_context(tls, check_hostname=tls_check_hostname) if tls is not None else None
        self.list_topics_api_key = (definitions.list_topics_api_key() if list_topics_api_key is None
                                    else list_topics_api_key)
        self.partition_limit = partition_limit
        self._opts: dict[str, Any] = dict(client_id=client_id, request_timeout=request_timeout)
        self._connect_timeout = connect_timeout
        self._caps = dict(max_versions or {})
        self._bootstrap_conn: Optional[Connection] = None
        self._conns: dict[int, Connection] = {}  # node id -> connection to its advertised address
        self._brokers: dict[int, tuple[str, int]] = {}
        self._controller: Optional[int] = None
        self._lock = asyncio.Lock()

    # -- connections -----------------------------------------------------------------------------
    async def __aenter__(self) -> Client:
        await self.connect()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _open(self, host: str, port: int) -> Connection:
        return await Connection.open(host, port, connect_timeout=self._connect_timeout, sasl=self.sasl,
                                     max_versions=self._caps, tls=self.tls, **self._opts)

    async def connect(self) -> None:
        """Connect to the first bootstrap broker that answers and learn the advertised brokers."""
        async with self._lock:
            if self._bootstrap_conn is not None and not self._bootstrap_conn.closed:
                return
            failures = []
            for host, port in self.bootstrap:
                try:
                    self._bootstrap_conn = await self._open(host, port)
                    break
                except KafkaConnectionError as e:
                    failures.append(str(e))
            else:
                raise KafkaConnectionError("no bootstrap broker answered: " + "; ".join(failures))
            await self._refresh(self._bootstrap_conn)

    async def _refresh(self, conn: Connection) -> None:
        version = conn.versions.require(MetadataRequest)
        meta = await conn.request(_metadata_request(version, []), version)
        self._brokers = {b.node_id: (b.host, b.port) for b in meta.brokers}
        self._controller = meta.controller_id if meta.controller_id in self._brokers else None

    async def _node(self) -> Connection:
        """The connection admin requests go to: the controller's advertised address (brokers
        forward admin requests there anyway), else any advertised broker, else the bootstrap one."""
        await self.connect()
        assert self._bootstrap_conn is not None
        order = ([self._controller] if self._controller is not None else []) + sorted(self._brokers)
        for node in order:
            conn = self._conns.get(node)
            if conn is not None and not conn.closed:
                return conn
            async with self._lock:
                conn = self._conns.get(node)
                if conn is not None and not conn.closed:
                    return conn
                host, port = self._brokers[node]
                b = self._bootstrap_conn
                if (host, port) == (b.host, b.port) and not b.closed:
                    conn = self._bootstrap_conn  # the same broker: reuse the connection
                else:
                    try:
                        conn = await self._open(host, port)
                    except KafkaConnectionError:
                        continue
                self._conns[node] = conn
                return conn
        if self._bootstrap_conn.closed:
            raise KafkaConnectionError("no broker reachable: the bootstrap connection closed and no "
                                       "advertised broker answered")
        return self._bootstrap_conn

    async def close(self) -> None:
        conns = {id(c): c for c in [self._bootstrap_conn, *self._conns.values()] if c is not None}
        self._conns.clear()
        self._bootstrap_conn = None
        await asyncio.gather(*(c.close() for c in conns.values()))

    async def api_versions(self) -> dict[int, tuple[int, int]]:
        """What the admin broker advertised: api key -> (min, max)."""
        return dict((await self._node()).versions.broker)

    async def negotiated(self) -> dict[str, Optional[int]]:
        """The version this client uses with the admin broker for each API it calls (None: not spoken)."""
        conn = await self._node()
        out: dict[str, Optional[int]] = {"ApiVersions": conn.versions.api_version}
        for cls in (MetadataRequest, DescribeTopicPartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
                    CreatePartitionsRequest, DescribeConfigsRequest):
            out[cls.__name__[:-7]] = conn.versions.pick(cls)
        out["ListTopics"] = conn.versions.pick(ListTopicsRequest, self.list_topics_api_key)
        if self.sasl is not None:
            out["SaslHandshake"] = conn.versions.pick(SaslHandshakeRequest)
            out["SaslAuthenticate"] = conn.versions.pick(SaslAuthenticateRequest)
        return out

    @property
    def requests_sent(self) -> Counter[tuple[str, int]]:
        """(api, version) -> how many requests this client sent, over all its connections."""
        total: Counter[tuple[str, int]] = Counter()
        conns = {id(c): c for c in [self._bootstrap_conn, *self._conns.values()] if c is not None}
        for c in conns.values():
            total.update(c.sent)
        return total

    # -- topics ----------------------------------------------------------------------------------
    async def list_topics(self, internal: bool = False) -> list[TopicListing]:
        """Topic names (KIP-142 ListTopics where the broker has it, else Metadata), sorted by name."""
        conn = await self._node()
        version = conn.versions.pick(ListTopicsRequest, self.list_topics_api_key)
        if version is not None:
            resp = await conn.request(ListTopicsRequest(list_internal=internal), version,
                                      api_key=self.list_topics_api_key)
            if resp.error_code:
                raise BrokerError("ListTopics", resp.error_code)
            found = [TopicListing(t.name, t.internal) for t in resp.topics]
        else:
            version = conn.versions.require(MetadataRequest)
            meta = await conn.request(_metadata_request(version, None), version)
            found = [TopicListing(t.name, t.is_internal) for t in meta.topics if t.name is not None]
        return sorted((t for t in found if internal or not t.internal), key=lambda t: t.name)

    async def describe_topics(self, names: Optional[Iterable[str]] = None) -> list[TopicDescription]:
        """Partitions of the named topics (all when None): DescribeTopicPartitions page by page where
        the broker has it, else Metadata. Unknown topics come back with their error, not raised."""
        wanted = None if names is None else list(dict.fromkeys(names))
        if wanted == []:
            return []
        conn = await self._node()
        version = conn.versions.pick(DescribeTopicPartitionsRequest)
        if version is not None:
            if wanted is None:  # Kafka reads no names as "all topics"; Tansu as none: name them
                wanted = [t.name for t in await self.list_topics(internal=True)]
                if not wanted:
                    return []
                found = await self._describe_paged(conn, version, wanted)
                return [found[n] for n in sorted(found)]
            found = await self._describe_paged(conn, version, wanted)
        else:
            version = conn.versions.require(MetadataRequest)
            meta = await conn.request(_metadata_request(version, wanted), version)
            found = {t.name: _description(t) for t in meta.topics if t.name is not None}
        if wanted is None:
            return [found[n] for n in sorted(found)]
        return [found.get(n) or TopicDescription(n, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for n in wanted]

    async def _describe_paged(self, conn: Connection, version: int,
                              wanted: Optional[list[str]]) -> dict[str, TopicDescription]:
        found: dict[str, TopicDescription] = {}
        req = DescribeTopicPartitionsRequest(
            topics=[DescribeTopicPartitionsRequest.TopicRequest(name=n) for n in wanted or []],
            response_partition_limit=self.partition_limit)
        seen: set[tuple[str, int]] = set()
        while True:
            resp = await conn.request(req, version)
            for t in resp.topics:
                if t.name is None:
                    continue
                page = _description(t)
                if t.name in found:  # a topic split across pages: its partitions continue
                    found[t.name].partitions.extend(page.partitions)
                else:
                    found[t.name] = page
            cursor = resp.next_cursor
            if cursor is None:
                break
            key = (cursor.topic_name, cursor.partition_index)
            if key in seen:
                raise ProtocolError(f"DescribeTopicPartitions from {conn.address}: cursor {key} repeats")
            seen.add(key)
            req.cursor = DescribeTopicPartitionsRequest.Cursor(topic_name=cursor.topic_name,
                                                               partition_index=cursor.partition_index)
        for d in found.values():
            d.partitions.sort(key=lambda p: p.partition)
        return found

    async def create_topics(self, topics: Iterable[Union[NewTopic, str]], *, timeout_ms: int = 30000,
                            validate_only: bool = False) -> list[CreateTopicResult]:
        """Create topics; one result per topic, in the order given. Partitions or replication factor
        left out take the broker's defaults (KIP-464) where its CreateTopics version allows (v4+);
        with an older broker those topics fail with UNSUPPORTED_VERSION and are not sent."""
        new = [NewTopic(t) if isinstance(t, str) else t for t in topics]
        if not new:
            return []
        conn = await self._node()
        version = conn.versions.require(CreateTopicsRequest)
        results: dict[str, CreateTopicResult] = {}
        send = []
        for t in new:
            defaults = t.assignments is None and (t.partitions is None or t.replication_factor is None)
            if defaults and version < KIP_464_VERSION:
                results[t.name] = CreateTopicResult(
                    t.name, ErrorCode.UNSUPPORTED_VERSION,
                    f"the broker speaks CreateTopics up to v{version}; broker-side defaults for partitions "
                    f"and replication factor (KIP-464) need v{KIP_464_VERSION}: give both")
            else:
                send.append(_creatable(t))
        if send:
            req = CreateTopicsRequest(topics=send, timeout_ms=timeout_ms, validate_only=validate_only)
            resp = await conn.request(req, version)
            for r in resp.topics:
                results[r.name] = _created(r, version)
        return [results.get(t.name) or CreateTopicResult(t.name, ErrorCode.UNKNOWN_SERVER_ERROR,
                                                         "the broker's response left this topic out")
                for t in new]

    async def delete_topics(self, names: Iterable[str], *, timeout_ms: int = 30000) -> list[TopicResult]:
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return []
        conn = await self._node()
        version = conn.versions.require(DeleteTopicsRequest)
        if version >= 6:  # v6 names topics by name or id
            req = DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=n) for n in wanted],
                                      timeout_ms=timeout_ms)
        else:
            req = DeleteTopicsRequest(topic_names=wanted, timeout_ms=timeout_ms)
        resp = await conn.request(req, version)
        got = {r.name: TopicResult(r.name, error_of(r.error_code), _message(r)) for r in resp.responses}
        return [got.get(n) or TopicResult(n, ErrorCode.UNKNOWN_SERVER_ERROR, "left out of the response")
                for n in wanted]

    async def create_partitions(self, counts: Mapping[str, int], *, timeout_ms: int = 30000,
                                validate_only: bool = False) -> list[TopicResult]:
        """Grow topics to the given total partition counts; brokers assign the new partitions."""
        if not counts:
            return []
        conn = await self._node()
        version = conn.versions.require(CreatePartitionsRequest)
        req = CreatePartitionsRequest(
            topics=[CreatePartitionsRequest.CreatePartitionsTopic(name=n, count=c, assignments=None)
                    for n, c in counts.items()],
            timeout_ms=timeout_ms, validate_only=validate_only)
        resp = await conn.request(req, version)
        got = {r.name: TopicResult(r.name, error_of(r.error_code), _message(r)) for r in resp.results}
        return [got.get(n) or TopicResult(n, ErrorCode.UNKNOWN_SERVER_ERROR, "left out of the response")
                for n in counts]

    async def describe_configs(self, names: Iterable[str],
                               keys: Optional[Sequence[str]] = None) -> list[TopicConfigs]:
        """Topic configs (all, or only ``keys``), one result per topic."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return []
        conn = await self._node()
        version = conn.versions.require(DescribeConfigsRequest)
        req = DescribeConfigsRequest(resources=[
            DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=TOPIC_RESOURCE, resource_name=n, configuration_keys=None if keys is None else list(keys))
            for n in wanted])
        resp = await conn.request(req, version)
        got = {}
        for r in resp.results:
            configs = {c.name: ConfigEntry(c.name, c.value, c.read_only, c.config_source, c.is_sensitive,
                                           c.is_default or c.config_source == 5) for c in r.configs}
            got[r.resource_name] = TopicConfigs(r.resource_name, error_of(r.error_code), _message(r),
                                                configs)
        return [got.get(n) or TopicConfigs(n, ErrorCode.UNKNOWN_SERVER_ERROR, "left out of the response")
                for n in wanted]


def _metadata_request(version: int, names: Optional[list[str]]) -> MetadataRequest:
    """Metadata for ``names`` (None: all topics; []: none, brokers only). v0 knows no null list:
    there an empty one means all topics."""
    topics = None if names is None else [MetadataRequest.Topic(name=n) for n in names]
    if version == 0 and topics is None:
        topics = []
    req = MetadataRequest(topics=topics)
    if version >= 4:
        req.allow_auto_topic_creation = False  # describing a topic must not create it
    return req


def _message(r: Any) -> Optional[str]:
    """The broker's error message, kept only with an error (some brokers say 'No error.')."""
    return (r.error_message or None) if r.error_code else None


def _description(t: Any) -> TopicDescription:
    return TopicDescription(
        name=t.name, error=error_of(t.error_code), internal=t.is_internal,
        topic_id=None if t.topic_id == _ZERO_UUID else t.topic_id,
        partitions=sorted((PartitionInfo(p.partition_index, p.leader_id, p.leader_epoch, list(p.replica_nodes),
                                         list(p.isr_nodes), list(p.offline_replicas), error_of(p.error_code))
                           for p in t.partitions), key=lambda p: p.partition))


def _creatable(t: NewTopic) -> Any:
    ct = CreateTopicsRequest.CreatableTopic(
        name=t.name,
        num_partitions=-1 if t.partitions is None or t.assignments is not None else t.partitions,
        replication_factor=-1 if t.replication_factor is None or t.assignments is not None else t.replication_factor,
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in t.configs.items()])
    if t.assignments is not None:
        ct.assignments = [CreateTopicsRequest.CreatableReplicaAssignment(partition_index=p, broker_ids=list(b))
                          for p, b in sorted(t.assignments.items())]
    return ct


def _created(r: Any, version: int) -> CreateTopicResult:
    out = CreateTopicResult(r.name, error_of(r.error_code), _message(r))
    if version >= 7 and r.topic_id != _ZERO_UUID:
        out.topic_id = r.topic_id
    if version >= KIP_525_VERSION and not r.error_code:
        out.partitions = r.num_partitions if r.num_partitions >= 0 else None
        out.replication_factor = r.replication_factor if r.replication_factor >= 0 else None
        out.config_error = error_of(r.topic_config_error_code)
        if r.configs is not None:
            out.configs = {c.name: ConfigEntry(c.name, c.value, c.read_only, c.config_source, c.is_sensitive,
                                               c.config_source == 5)
                           for c in r.configs}
    return out
