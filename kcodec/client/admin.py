"""The asyncio admin client: bootstrap, then the advertised brokers; topic administration.

    async with Client("127.0.0.1:9092") as client:
        names = await client.list_topics()
        results = await client.create_topics([NewTopic("orders", partitions=3)])
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import Counter
from typing import Any, Awaitable, Callable, Iterable, Mapping, Optional, Sequence, TypeVar, Union

from kcodec import definitions
from kcodec.errors import ErrorCode
from kcodec.messages import (CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
                             DescribeConfigsRequest, DescribeTopicPartitionsRequest, ListTopicsRequest,
                             MetadataRequest, SaslAuthenticateRequest, SaslHandshakeRequest)
from kcodec.versions import guess_release

from kcodec.security.tls import ClientTls, PathLike, client_context

from .cluster_view import ClusterView, metadata_request
from .connection import Connection
from .errors import (BrokerError, CallTimeoutError, ClientError, ProtocolError,
                     RequestTimeoutError, RetriableTopics, error_of)
from .retry import Backoff, Deadline, retriable, retriable_failure
from .results import (ApiRange, BrokerNode, ClusterDescription, ConfigEntry, CreateTopicResult, NewTopic,
                      PartitionInfo, TopicConfigs, TopicDescription, TopicListing, TopicResult)
from .sasl import Sasl

TOPIC_RESOURCE = 2  # DescribeConfigs resource type
KIP_464_VERSION = 4  # CreateTopics: -1 partitions / replication factor mean the broker's defaults
KIP_525_VERSION = 5  # CreateTopics: the response carries partitions, replication factor, configs
_ZERO_UUID = uuid.UUID(int=0)
T = TypeVar("T")
R = TypeVar("R", bound=TopicResult)  # a per-topic outcome: .name, .error
log = logging.getLogger("kcodec.client")


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
    tls_cert / tls_key: the client's certificate chain and private key (PEM files; the key may be in
        the certificate's file) for brokers that ask for one (mutual TLS, Kafka's ssl.client.auth);
        loaded into a given ``tls`` context too.
    timeout: each call's overall deadline in seconds, retries included (a call's own ``timeout=``
        overrides it); past it the call raises CallTimeoutError.
    request_timeout / connect_timeout: the most one request / one TCP connect may take (both capped
        by what is left of the call's deadline).
    retry_backoff / retry_backoff_max: the first and the largest pause between attempts (doubling,
        with +-20% jitter).
    metadata_max_age: refresh brokers and controller this often (seconds; None: only when needed).
    list_topics_api_key: where the broker serves ListTopics (KIP-142); kcodec's default otherwise.
    max_versions: api key -> highest version to use (to pin a broker to older behaviour).
    partition_limit: DescribeTopicPartitions' page size (partitions per response).
    """

    def __init__(self, bootstrap: Union[str, Sequence[str]], *, client_id: str = "kcodec",
                 sasl_user: Optional[str] = None, sasl_password: Optional[str] = None,
                 sasl_mechanism: Optional[str] = None, sasl: Optional[Sasl] = None,
                 tls: Optional[ClientTls] = None, tls_check_hostname: bool = True,
                 tls_cert: Optional[PathLike] = None, tls_key: Optional[PathLike] = None,
                 request_timeout: float = 30.0, connect_timeout: float = 10.0, timeout: float = 60.0,
                 retry_backoff: float = 0.1, retry_backoff_max: float = 2.0,
                 metadata_max_age: Optional[float] = 300.0,
                 list_topics_api_key: Optional[int] = None, max_versions: Optional[Mapping[int, int]] = None,
                 partition_limit: int = 2000) -> None:
        items = bootstrap.split(",") if isinstance(bootstrap, str) else list(bootstrap)
        self.bootstrap = [parse_address(a) for a in items if a.strip()]
        if not self.bootstrap:
            raise ValueError("no bootstrap address given")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, not {timeout}")
        if sasl is None and (sasl_user is not None or sasl_password is not None or sasl_mechanism is not None):
            sasl = Sasl(sasl_mechanism or "PLAIN", sasl_user, sasl_password)
        self.sasl = sasl
        if tls is None and (tls_cert is not None or tls_key is not None):
            raise ValueError("tls_cert and tls_key need tls= (a CA file, True or an SSLContext)")
        self.tls = (client_context(tls, check_hostname=tls_check_hostname, cert=tls_cert, key=tls_key)
                    if tls is not None else None)
        self.list_topics_api_key = (definitions.list_topics_api_key() if list_topics_api_key is None
                                    else list_topics_api_key)
        self.partition_limit = partition_limit
        self.timeout = timeout
        self.request_timeout = request_timeout
        self._opts: dict[str, Any] = dict(client_id=client_id, request_timeout=request_timeout)
        self._caps = dict(max_versions or {})
        self._backoff = Backoff(retry_backoff, retry_backoff_max)
        self.cluster = ClusterView(self.bootstrap, self._open, connect_timeout=connect_timeout,
                                   request_timeout=request_timeout, metadata_max_age=metadata_max_age,
                                   reconnect_backoff=self._backoff)
        self._lock = asyncio.Lock()

    # -- connections -----------------------------------------------------------------------------
    async def __aenter__(self) -> Client:
        await self.connect()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _open(self, host: str, port: int, connect_timeout: float) -> Connection:
        return await Connection.open(host, port, connect_timeout=connect_timeout, sasl=self.sasl,
                                     max_versions=self._caps, tls=self.tls, **self._opts)

    async def connect(self, timeout: Optional[float] = None) -> None:
        """Learn the advertised brokers and the controller from the first bootstrap broker that
        answers (one pass over them: KafkaConnectionError when none does), then keep them fresh."""
        async with self._lock:
            if not self.cluster.connected:
                await self.cluster.refresh(Deadline(self.timeout if timeout is None else timeout, "connect"))
            self.cluster.start_timer()

    async def _call(self, what: str, attempt: Callable[[Connection, Deadline], Awaitable[T]],
                    timeout: Optional[float]) -> T:
        """``attempt`` on the admin broker until it succeeds, fails for good, or the deadline passes.
        Between attempts: a pause (exponential backoff with jitter) and a metadata refresh."""
        deadline = Deadline(self.timeout if timeout is None else timeout, what)
        tries = 0
        while True:
            tries += 1
            try:
                conn = await self.cluster.admin_connection(deadline)
                try:
                    return await attempt(conn, deadline)
                except RequestTimeoutError:
                    # as Kafka's clients do: a broker that let a request time out may be gone
                    # without a word (a half-open connection): the next attempt connects afresh
                    await conn.close()
                    raise
            except ClientError as e:
                if not retriable_failure(e):
                    raise
                last: ClientError = e
            self.cluster.stale = True
            pause = self._backoff.delay(tries - 1)
            if deadline.remaining() <= pause:
                raise deadline.expired(tries, last)
            log.info("%s: attempt %d failed (%s); again in %.2fs", what, tries, last, pause)
            await asyncio.sleep(pause)

    async def _per_topic(self, what: str, names: list[str],
                         send: Callable[[Connection, Deadline, list[str]], Awaitable[dict[str, R]]],
                         timeout: Optional[float]) -> dict[str, R]:
        """A call whose topics each get an outcome: topics that failed with a retriable error
        (NOT_CONTROLLER, ...) are sent again, alone. Those still failing at the deadline keep their
        last error; the call raises CallTimeoutError only when some topic has no outcome at all."""
        results: dict[str, R] = {}
        pending = list(names)

        async def attempt(conn: Connection, deadline: Deadline) -> dict[str, R]:
            got = await send(conn, deadline, pending)
            results.update(got)
            again = [n for n in pending if n in got and retriable(got[n].error)]
            if again:
                pending[:] = again
                raise RetriableTopics(what, {n: got[n].error for n in again})
            return results

        try:
            return await self._call(what, attempt, timeout)
        except CallTimeoutError:
            if all(n in results for n in names):
                return results
            raise

    def _ask(self, conn: Connection, deadline: Deadline, req: Any, version: int, **kw: Any) -> Awaitable[Any]:
        return conn.request(req, version, timeout=deadline.cap(self.request_timeout), **kw)

    async def close(self) -> None:
        await self.cluster.close()

    async def api_versions(self, timeout: Optional[float] = None) -> dict[int, tuple[int, int]]:
        """What the admin broker advertised: api key -> (min, max)."""
        async def attempt(conn: Connection, deadline: Deadline) -> dict[int, tuple[int, int]]:
            return dict(conn.versions.broker)
        return await self._call("ApiVersions", attempt, timeout)

    async def negotiated(self, timeout: Optional[float] = None) -> dict[str, Optional[int]]:
        """The version this client uses with the admin broker for each API it calls (None: not spoken)."""
        conn = await self._call("ApiVersions", _connection, timeout)
        out: dict[str, Optional[int]] = {"ApiVersions": conn.versions.api_version}
        for cls in (MetadataRequest, DescribeTopicPartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
                    CreatePartitionsRequest, DescribeConfigsRequest):
            out[cls.__name__[:-7]] = conn.versions.pick(cls)
        out["ListTopics"] = conn.versions.pick(ListTopicsRequest, self.list_topics_api_key)
        if self.sasl is not None:
            out["SaslHandshake"] = conn.versions.pick(SaslHandshakeRequest)
            out["SaslAuthenticate"] = conn.versions.pick(SaslAuthenticateRequest)
        return out

    async def describe_cluster(self, timeout: Optional[float] = None) -> ClusterDescription:
        """Cluster id, controller, brokers with racks (fresh Metadata), the admin broker's API ranges
        and the Apache Kafka release they point to (kcodec.versions.guess_release)."""
        async def attempt(conn: Connection, deadline: Deadline) -> ClusterDescription:
            await self.cluster.refresh(deadline)
            view = self.cluster
            names = definitions.api_keys()
            ranges = conn.versions.broker
            guess = guess_release(ranges)
            return ClusterDescription(
                view.cluster_id, view.controller,
                [BrokerNode(n, h, p, view.racks.get(n)) for n, (h, p) in sorted(view.nodes.items())],
                [ApiRange(k, names.get(k, f"api{k}"), lo, hi) for k, (lo, hi) in sorted(ranges.items())],
                str(guess), guess.exact)
        return await self._call("DescribeCluster", attempt, timeout)

    @property
    def requests_sent(self) -> Counter[tuple[str, int]]:
        """(api, version) -> how many requests this client sent, over all its connections."""
        total: Counter[tuple[str, int]] = Counter()
        for c in self.cluster.connections():
            total.update(c.sent)
        return total

    # -- topics ----------------------------------------------------------------------------------
    async def list_topics(self, internal: bool = False, *, timeout: Optional[float] = None) -> list[TopicListing]:
        """Topic names (KIP-142 ListTopics where the broker has it, else Metadata), sorted by name."""
        async def attempt(conn: Connection, deadline: Deadline) -> list[TopicListing]:
            return await self._list(conn, deadline, internal)
        return await self._call("ListTopics", attempt, timeout)

    async def _list(self, conn: Connection, deadline: Deadline, internal: bool) -> list[TopicListing]:
        version = conn.versions.pick(ListTopicsRequest, self.list_topics_api_key)
        if version is not None:
            resp = await self._ask(conn, deadline, ListTopicsRequest(list_internal=internal), version,
                                   api_key=self.list_topics_api_key)
            if resp.error_code:
                raise BrokerError("ListTopics", resp.error_code)
            found = [TopicListing(t.name, t.internal) for t in resp.topics]
        else:
            version = conn.versions.require(MetadataRequest)
            meta = await self._ask(conn, deadline, metadata_request(version, None), version)
            found = [TopicListing(t.name, t.is_internal) for t in meta.topics if t.name is not None]
        return sorted((t for t in found if internal or not t.internal), key=lambda t: t.name)

    async def describe_topics(self, names: Optional[Iterable[str]] = None, *,
                              timeout: Optional[float] = None) -> list[TopicDescription]:
        """Partitions of the named topics (all when None): DescribeTopicPartitions page by page where
        the broker has it, else Metadata. Unknown topics come back with their error, not raised."""
        wanted = None if names is None else list(dict.fromkeys(names))
        if wanted == []:
            return []

        async def attempt(conn: Connection, deadline: Deadline) -> list[TopicDescription]:
            return await self._describe(conn, deadline, wanted)
        return await self._call("DescribeTopics", attempt, timeout)

    async def _describe(self, conn: Connection, deadline: Deadline,
                        wanted: Optional[list[str]]) -> list[TopicDescription]:
        version = conn.versions.pick(DescribeTopicPartitionsRequest)
        if version is not None:
            if wanted is None:  # Kafka reads no names as "all topics"; Tansu as none: name them
                everything = [t.name for t in await self._list(conn, deadline, internal=True)]
                if not everything:
                    return []
                found = await self._describe_paged(conn, deadline, version, everything)
                return [found[n] for n in sorted(found)]
            found = await self._describe_paged(conn, deadline, version, wanted)
        else:
            version = conn.versions.require(MetadataRequest)
            meta = await self._ask(conn, deadline, metadata_request(version, wanted), version)
            found = {t.name: _description(t) for t in meta.topics if t.name is not None}
        if wanted is None:
            return [found[n] for n in sorted(found)]
        return [found.get(n) or TopicDescription(n, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for n in wanted]

    async def _describe_paged(self, conn: Connection, deadline: Deadline, version: int,
                              wanted: list[str]) -> dict[str, TopicDescription]:
        found: dict[str, TopicDescription] = {}
        req = DescribeTopicPartitionsRequest(
            topics=[DescribeTopicPartitionsRequest.TopicRequest(name=n) for n in wanted],
            response_partition_limit=self.partition_limit)
        seen: set[tuple[str, int]] = set()
        while True:
            resp = await self._ask(conn, deadline, req, version)
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
                            validate_only: bool = False, timeout: Optional[float] = None) -> list[CreateTopicResult]:
        """Create topics; one result per topic, in the order given. Partitions or replication factor
        left out take the broker's defaults (KIP-464) where its CreateTopics version allows (v4+);
        with an older broker those topics fail with UNSUPPORTED_VERSION and are not sent."""
        given = [NewTopic(t) if isinstance(t, str) else t for t in topics]
        new = {t.name: t for t in given}
        if not new:
            return []

        async def send(conn: Connection, deadline: Deadline, names: list[str]) -> dict[str, CreateTopicResult]:
            version = conn.versions.require(CreateTopicsRequest)
            results: dict[str, CreateTopicResult] = {}
            creatable = []
            for name in names:
                t = new[name]
                defaults = t.assignments is None and (t.partitions is None or t.replication_factor is None)
                if defaults and version < KIP_464_VERSION:
                    results[name] = CreateTopicResult(
                        name, ErrorCode.UNSUPPORTED_VERSION,
                        f"the broker speaks CreateTopics up to v{version}; broker-side defaults for partitions "
                        f"and replication factor (KIP-464) need v{KIP_464_VERSION}: give both")
                else:
                    creatable.append(_creatable(t))
            if creatable:
                req = CreateTopicsRequest(topics=creatable, timeout_ms=timeout_ms, validate_only=validate_only)
                resp = await self._ask(conn, deadline, req, version)
                for r in resp.topics:
                    results[r.name] = _created(r, version)
            return results

        got = await self._per_topic("CreateTopics", list(new), send, timeout)
        return [got.get(n) or CreateTopicResult(n, ErrorCode.UNKNOWN_SERVER_ERROR,
                                                "the broker's response left this topic out")
                for n in (t.name for t in given)]

    async def delete_topics(self, names: Iterable[str], *, timeout_ms: int = 30000,
                            timeout: Optional[float] = None) -> list[TopicResult]:
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return []

        async def send(conn: Connection, deadline: Deadline, names: list[str]) -> dict[str, TopicResult]:
            version = conn.versions.require(DeleteTopicsRequest)
            if version >= 6:  # v6 names topics by name or id
                req = DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=n) for n in names],
                                          timeout_ms=timeout_ms)
            else:
                req = DeleteTopicsRequest(topic_names=names, timeout_ms=timeout_ms)
            resp = await self._ask(conn, deadline, req, version)
            return {r.name: TopicResult(r.name, error_of(r.error_code), _message(r)) for r in resp.responses}

        got = await self._per_topic("DeleteTopics", wanted, send, timeout)
        return [got.get(n) or TopicResult(n, ErrorCode.UNKNOWN_SERVER_ERROR, "left out of the response")
                for n in wanted]

    async def create_partitions(self, counts: Mapping[str, int], *, timeout_ms: int = 30000,
                                validate_only: bool = False, timeout: Optional[float] = None) -> list[TopicResult]:
        """Grow topics to the given total partition counts; brokers assign the new partitions."""
        if not counts:
            return []

        async def send(conn: Connection, deadline: Deadline, names: list[str]) -> dict[str, TopicResult]:
            version = conn.versions.require(CreatePartitionsRequest)
            req = CreatePartitionsRequest(
                topics=[CreatePartitionsRequest.CreatePartitionsTopic(name=n, count=counts[n], assignments=None)
                        for n in names],
                timeout_ms=timeout_ms, validate_only=validate_only)
            resp = await self._ask(conn, deadline, req, version)
            return {r.name: TopicResult(r.name, error_of(r.error_code), _message(r)) for r in resp.results}

        got = await self._per_topic("CreatePartitions", list(counts), send, timeout)
        return [got.get(n) or TopicResult(n, ErrorCode.UNKNOWN_SERVER_ERROR, "left out of the response")
                for n in counts]

    async def describe_configs(self, names: Iterable[str], keys: Optional[Sequence[str]] = None, *,
                               timeout: Optional[float] = None) -> list[TopicConfigs]:
        """Topic configs (all, or only ``keys``), one result per topic."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return []

        async def send(conn: Connection, deadline: Deadline, names: list[str]) -> dict[str, TopicConfigs]:
            version = conn.versions.require(DescribeConfigsRequest)
            req = DescribeConfigsRequest(resources=[
                DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=TOPIC_RESOURCE, resource_name=n,
                    configuration_keys=None if keys is None else list(keys))
                for n in names])
            resp = await self._ask(conn, deadline, req, version)
            got = {}
            for r in resp.results:
                configs = {c.name: ConfigEntry(c.name, c.value, c.read_only, c.config_source, c.is_sensitive,
                                               c.is_default or c.config_source == 5) for c in r.configs}
                got[r.resource_name] = TopicConfigs(r.resource_name, error_of(r.error_code), _message(r),
                                                    configs)
            return got

        got = await self._per_topic("DescribeConfigs", wanted, send, timeout)
        return [got.get(n) or TopicConfigs(n, ErrorCode.UNKNOWN_SERVER_ERROR, "left out of the response")
                for n in wanted]


async def _connection(conn: Connection, deadline: Deadline) -> Connection:
    return conn


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
