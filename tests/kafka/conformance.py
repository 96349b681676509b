"""Conformance diffs: one request sequence sent to Apache Kafka and to ``kcodec broker``, the decoded
responses compared field by field.

A scenario (``@scenario``, in scenarios_*.py) is a function of a ``Recorder``: it sends kcodec-encoded frames
over sockets (``call``, or ``send``/``receive`` for a request answered later, as a JoinGroup) and each answer
is recorded under a step name, as ``kcodec.to_dict`` gives it (a Fetch's records decoded into batches). It
runs once against each target, a real Kafka and a kcodec broker of the same shape (broker count, listeners,
users, configs); both runs use the same names (``Recorder.tag``), so a difference is a difference of answers.

What legitimately differs is mapped away by the normalisers below, and nothing else: throttle times, cluster
ids, uuids and producer ids (each replaced by its order of first appearance, so equal stays equal), ports
(by node id, in listeners' strings too), fetch session ids, transaction markers' timestamps and log append
times, the bounds a record's timestamp error names (the broker's clock), the order of collections Kafka keeps
in hash maps, and, on three nodes, where Kafka placed replicas and leaders (its placement is random). What a
real broker does a moment later is waited for, not compared: brokers learning topics from the metadata log
(``Recorder.wait_topics``), answers that say a broker is not ready yet (``NOT_READY``, sent again). Every other
difference fails the test unless accepted-differences.json lists it with a reason.
"""

from __future__ import annotations

import base64
import json
import re
import socket
import struct
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import kcodec
from kcodec.messages import (FetchResponse, MetadataRequest, SaslAuthenticateRequest, SaslHandshakeRequest)
from kcodec.records import read_batches

ACCEPTED = Path(__file__).resolve().parent / "accepted-differences.json"
SCENARIOS: dict[str, "Scenario"] = {}


@dataclass(frozen=True)
class Scenario:
    name: str
    shape: str                      # "one" (1 node, SASL and an authorizer) or "three" (3 nodes)
    run: Callable[["Recorder"], None]
    doc: str
    last: bool = False              # it changes the cluster for good: run after the others


def scenario(shape: str = "one", last: bool = False) -> Callable[[Callable[["Recorder"], None]],
                                                                   Callable[["Recorder"], None]]:
    """Register a scenario under its function's name (without ``scenario_``)."""
    assert shape in ("one", "three")

    def register(fn: Callable[[Recorder], None]) -> Callable[[Recorder], None]:
        name = fn.__name__.removeprefix("scenario_")
        assert name not in SCENARIOS, name
        SCENARIOS[name] = Scenario(name, shape, fn, (fn.__doc__ or "").strip(), last)
        return fn
    return register


def in_order() -> list[str]:
    """The scenarios' names, the ones that must run last at the end."""
    return sorted(SCENARIOS, key=lambda n: (SCENARIOS[n].last, n))


@dataclass
class Target:
    """One broker under test: its nodes' addresses on the PLAINTEXT listener (principal ANONYMOUS) and on
    the SASL_PLAINTEXT one (None without), and the SASL PLAIN users' passwords."""

    name: str
    addresses: list[tuple[str, int]]
    sasl_addresses: Optional[list[tuple[str, int]]] = None
    users: dict[str, str] = field(default_factory=dict)

    @property
    def node_of_port(self) -> dict[int, int]:
        ports = {p: i + 1 for i, (_, p) in enumerate(self.addresses)}
        ports.update({p: i + 1 for i, (_, p) in enumerate(self.sasl_addresses or [])})
        return ports


class Conn:
    """A blocking connection speaking kcodec frames, requests pipelined: ``send`` now, ``receive`` later."""

    def __init__(self, address: tuple[str, int], timeout: float) -> None:
        self.sock = socket.create_connection(address, timeout=timeout)
        self.correlation = 0
        self.pending: list[int] = []

    def send(self, req: Any, version: int, expect_answer: bool = True) -> tuple[int, int, int]:
        self.correlation += 1
        self.sock.sendall(kcodec.encode_request(req, version, correlation_id=self.correlation,
                                                client_id="kcodec-conformance"))
        if expect_answer:
            self.pending.append(self.correlation)
        return type(req).API_KEY, version, self.correlation

    def receive(self, sent: tuple[int, int, int]) -> Any:
        key, version, correlation = sent
        assert self.pending and self.pending[0] == correlation, "answers come in request order"
        self.pending.pop(0)
        header, resp = kcodec.decode_response(self._frame(), key, version)
        assert header.correlation_id == correlation, (header.correlation_id, correlation)
        return resp

    def _frame(self) -> bytes:
        head = self._exact(4)
        return head + self._exact(struct.unpack(">i", head)[0])

    def _exact(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError(f"closed by the broker after {len(out)} of {n} bytes")
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self.sock.close()


class Recorder:
    """One run of a scenario against one target: its connections and the answers it recorded."""

    def __init__(self, target: Target, tag: str, timeout: float = 30.0) -> None:
        self.target = target
        self.tag = tag
        self.timeout = timeout
        self.steps: list[tuple[str, str, Any]] = []  # step, the response's class name, its answer
        self._conns: dict[tuple[int, Optional[str], str], Conn] = {}

    # -- connections -------------------------------------------------------------------------------
    def conn(self, node: int = 1, user: Optional[str] = None, name: str = "") -> Conn:
        """The connection ``name`` to node ``node``, as ``user`` (SASL PLAIN) or ANONYMOUS (PLAINTEXT)."""
        key = (node, user, name)
        if key not in self._conns:
            if user is None:
                c = Conn(self.target.addresses[node - 1], self.timeout)
            else:
                assert self.target.sasl_addresses, f"{self.target.name} has no SASL listener"
                c = Conn(self.target.sasl_addresses[node - 1], self.timeout)
                hs = c.receive(c.send(SaslHandshakeRequest(mechanism="PLAIN"), 1))
                assert hs.error_code == 0, hs
                auth = SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{self.target.users[user]}".encode())
                done = c.receive(c.send(auth, 2))
                assert done.error_code == 0, done
            self._conns[key] = c
        return self._conns[key]

    def close(self) -> None:
        for c in self._conns.values():
            c.close()
        self._conns.clear()

    # -- requests ----------------------------------------------------------------------------------
    def call(self, step: str, req: Any, version: int, *, node: int = 1, user: Optional[str] = None,
             conn: str = "") -> Any:
        """Send, wait for the answer, record it under ``step``, return it. An answer that says the broker is not
        ready yet (``NOT_READY`` anywhere in it: a coordinator still loading, a broker still fetching its first
        block of producer ids, a partition whose new leader has not taken over, a transaction still completing)
        is sent again for up to 10 s, as clients do: when a real Kafka's broker is ready is no part of its
        answers."""
        c = self.conn(node, user, conn)
        resp = c.receive(c.send(req, version))
        deadline = time.monotonic() + 10
        while _not_ready(resp) and time.monotonic() < deadline:
            time.sleep(0.1)
            resp = c.receive(c.send(req, version))
        return self.record(step, resp)

    def send(self, req: Any, version: int, *, node: int = 1, user: Optional[str] = None, conn: str = "") -> Any:
        """Send without waiting (``receive`` takes the answer); acks=0 Produce: ``expect_answer=False``."""
        c = self.conn(node, user, conn)
        return c, c.send(req, version)

    def send_unanswered(self, req: Any, version: int, *, node: int = 1, conn: str = "") -> None:
        """A request that gets no answer (Produce with acks=0): the next answer on the connection must be
        the next request's (``Conn.receive`` checks the correlation id)."""
        self.conn(node, None, conn).send(req, version, expect_answer=False)

    def receive(self, step: str, sent: Any) -> Any:
        c, ticket = sent
        return self.record(step, c.receive(ticket))

    def quiet(self, req: Any, version: int, *, node: int = 1, user: Optional[str] = None, conn: str = "") -> Any:
        """A call whose answer is not compared (waiting for state to settle)."""
        c = self.conn(node, user, conn)
        return c.receive(c.send(req, version))

    def record(self, step: str, resp: Any) -> Any:
        self.note(step, answer_dict(resp), type(resp).__name__)
        return resp

    def note(self, step: str, value: Any, kind: str = "") -> None:
        """Record a value the scenario derived (compared like an answer)."""
        assert all(s != step for s, _, _ in self.steps), f"step {step!r} recorded twice"
        self.steps.append((step, kind, value))

    # -- waiting for a real Kafka's brokers to learn what their controller decided ------------------------
    def until(self, what: str, check: Callable[[], bool], timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.target.name}: {what} did not happen within {timeout:.0f} s")
            time.sleep(0.05)

    def wait_topics(self, names: Iterable[str], exist: bool = True) -> None:
        """Until every node's Metadata shows ``names`` with a leader for each partition (or, ``exist=False``,
        does not know them)."""
        names = list(names)

        def settled() -> bool:
            for node in range(1, len(self.target.addresses) + 1):
                md = self.quiet(MetadataRequest(topics=[MetadataRequest.Topic(name=n) for n in names],
                                                allow_auto_topic_creation=False), 12, node=node, conn="wait")
                for t in md.topics:
                    known = t.error_code == 0 and all(p.leader_id >= 0 for p in t.partitions)
                    if known != exist or (not exist and t.error_code != 3):
                        return False
            return True
        self.until(f"topics {names} {'appearing' if exist else 'going'} everywhere", settled)


# A broker catching up (Recorder.call): LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, COORDINATOR_LOAD_IN_PROGRESS,
# CONCURRENT_TRANSACTIONS (the previous transaction's markers still being written)
NOT_READY = {5, 6, 14, 51}


def _not_ready(resp: Any) -> bool:
    return any(code in NOT_READY for code in _error_codes(kcodec.to_dict(resp)))


def _error_codes(value: Any) -> Iterable[int]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k.endswith("error_code") and isinstance(v, int):  # partition_error_code too
                yield v
            else:
                yield from _error_codes(v)
    elif isinstance(value, list):
        for v in value:
            yield from _error_codes(v)


# -- what is recorded ---------------------------------------------------------------------------------

def answer_dict(resp: Any) -> Any:
    """``kcodec.to_dict`` of a response; a Fetch's records as their batches (see ``batches``)."""
    d = kcodec.to_dict(resp)
    if isinstance(resp, FetchResponse):
        for t, td in zip(resp.responses, d["responses"]):
            for p, pd in zip(t.partitions, td["partitions"]):
                pd["records"] = batches(p.records)
    return d


def batches(records: Optional[bytes]) -> Any:
    """A records field as its batches' fields and records (a partial batch at the end: its size only)."""
    if records is None:
        return None
    got = read_batches(records)
    out: list[Any] = []
    for b in got.batches:
        clock = (lambda ts: "<broker's clock>") if b.is_control else (lambda ts: ts)  # markers: when written
        out.append({
            "base_offset": b.base_offset, "last_offset_delta": b.last_offset_delta, "magic": b.magic,
            "attributes": b.attributes, "partition_leader_epoch": b.partition_leader_epoch,
            "base_timestamp": clock(b.base_timestamp), "max_timestamp": clock(b.max_timestamp),
            "producer_id": b.producer_id, "producer_epoch": b.producer_epoch, "base_sequence": b.base_sequence,
            "record_count": b.record_count,
            "records": [{"offset": r.offset, "timestamp": clock(r.timestamp), "key": _b(r.key), "value": _b(r.value),
                         "headers": [[k, _b(v)] for k, v in r.headers]} for r in b]})
    if got.partial_bytes:
        out.append({"partial_batch_at": got.partial_offset})
    return out


def _b(v: Any) -> Optional[str]:
    return None if v is None else base64.b64encode(bytes(v)).decode("ascii")


# -- normalisers: what legitimately differs -----------------------------------------------------------

_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_KAFKA_UUID = re.compile(r"[A-Za-z0-9_-]{22}")
ZERO_UUID = str(uuid.UUID(int=0))
_DROPPED = {"throttle_time_ms"}
# A record's timestamp error names the bounds the broker's clock gave (scenarios check them against the time sent)
_TIMESTAMP_RANGE = re.compile(r"The timestamp should be within \[-?\d+, -?\d+\]")
_NOW_RANGE = "The timestamp should be within [<now - before.max.ms>, <now + after.max.ms>]"
_HOST_PORT = re.compile(r"\b(127\.0\.0\.1):(\d+)\b")
# Collections whose order Kafka leaves to a hash map (a Scala Set or a HashMap of the request's entries): sorted
# by their key before comparing, per response class. Order that means something (DescribeTopicPartitions'
# topics, which its cursor walks) is compared as it comes.
_UNORDERED = {
    "MetadataResponse": {"topics": "name"},
    "CreateTopicsResponse": {"topics": "name", "configs": "name"},
    "DeleteTopicsResponse": {"responses": "name"},
    "CreatePartitionsResponse": {"results": "name"},
    "DescribeConfigsResponse": {"results": "resource_name", "configs": "name"},
    "DescribeGroupsResponse": {"groups": "group_id", "members": "member_id"},
    "JoinGroupResponse": {"members": "member_id"},
    "ProduceResponse": {"responses": "name", "partition_responses": "index"},
}
_PLACEMENT = {"leader_id", "controller_id"}       # three nodes: where Kafka put leaders is random
_REPLICA_LISTS = {"replica_nodes", "isr_nodes", "offline_replicas", "eligible_leader_replicas", "last_known_elr",
                  "replicas", "isr", "removing_replicas", "adding_replicas"}


class Normaliser:
    """Maps one run's answers onto placeholders; one instance per run (numbering is by first appearance)."""

    def __init__(self, target: Target, placement: bool) -> None:
        self.ports = target.node_of_port
        self.placement = placement
        self.ids: dict[tuple[str, Any], str] = {}
        self.unordered: dict[str, str] = {}

    def answer(self, kind: str, value: Any) -> Any:
        self.unordered = _UNORDERED.get(kind, {})
        return self(value)

    def _id(self, kind: str, value: Any) -> str:
        key = (kind, value)
        if key not in self.ids:
            self.ids[key] = f"<{kind} {sum(1 for k in self.ids if k[0] == kind) + 1}>"
        return self.ids[key]

    def __call__(self, value: Any, name: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items() if k not in _DROPPED}
        if isinstance(value, list):
            key = self.unordered.get(name)
            keyed = key is not None and all(isinstance(v, dict) for v in value)
            if keyed:  # sorted before (names: placeholders numbered in name order) and after (ids) normalising
                value = sorted(value, key=lambda v: str(v.get(key)))
            items = [self(v, name) for v in value]
            if keyed:
                items.sort(key=lambda v: str(v.get(key)))
            if self.placement and name in _REPLICA_LISTS:
                return sorted(items)
            return items
        if isinstance(value, str):
            if name == "cluster_id":
                return "<cluster id>"
            if value == ZERO_UUID:
                return value
            if name.endswith("member_id") and _KAFKA_UUID.fullmatch(value):
                return self._id("uuid", value)
            value = _TIMESTAMP_RANGE.sub(_NOW_RANGE, value)
            value = _HOST_PORT.sub(lambda m: f"{m[1]}:<port of node {self.ports[int(m[2])]}>"
                                   if int(m[2]) in self.ports else m[0], value)  # in listeners' configs
            return _CANONICAL_UUID.sub(lambda m: self._id("uuid", m.group(0)), value)
        if isinstance(value, int) and not isinstance(value, bool):
            if name == "port" and value in self.ports:
                return f"<port of node {self.ports[value]}>"
            if name in ("producer_id",) and value >= 0:
                return self._id("producer id", value)
            if name == "log_append_time_ms" and value >= 0:  # a LogAppendTime topic's append: the broker's clock
                return "<broker's clock>"
            if name == "session_id" and value != 0:
                return self._id("fetch session", value)
            if self.placement and name in _PLACEMENT and value >= 0:
                return "<a node>"
        return value


# -- differences --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Difference:
    scenario: str
    step: str
    path: str
    kafka: Any
    kcodec: Any

    def __str__(self) -> str:
        return f"{self.scenario} / {self.step} / {self.path}: Kafka {_short(self.kafka)} | kcodec {_short(self.kcodec)}"


def _short(v: Any, limit: int = 300) -> str:
    text = json.dumps(v, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit] + "..."


def _by_name(items: Any) -> Optional[dict[str, Any]]:
    """A list of entries with distinct names (configs), keyed by name; None for any other list."""
    if not isinstance(items, list) or not items or not all(isinstance(x, dict) and "name" in x for x in items):
        return None
    named = {str(x["name"]): x for x in items}
    return named if len(named) == len(items) else None


def diff(a: Any, b: Any, path: str = "") -> Iterable[tuple[str, Any, Any]]:
    """(path, a's, b's) for every place they differ. Lists of named entries of different lengths are
    compared by name (``configs[name=retention.ms]``); any other list whose length differs is one difference."""
    named_a, named_b = _by_name(a), _by_name(b)
    if named_a is not None and named_b is not None and len(a) != len(b):
        for k in list(named_a) + [k for k in named_b if k not in named_a]:
            yield from diff(named_a.get(k, "<absent>"), named_b.get(k, "<absent>"), f"{path}[name={k}]")
    elif isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            yield from diff(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}" if path else k)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from diff(x, y, f"{path}[{i}]")
    elif a != b:
        yield path, a, b


def compare(name: str, kafka: list[tuple[str, Any]], kcodec_steps: list[tuple[str, Any]]) -> list[Difference]:
    out = []
    steps_a, steps_b = [s for s, _ in kafka], [s for s, _ in kcodec_steps]
    if steps_a != steps_b:  # a scenario that branched: the answers that led there differ first
        out.append(Difference(name, "<steps>", "", steps_a, steps_b))
    answers = dict(kcodec_steps)
    for step, value in kafka:
        if step in answers:
            out += [Difference(name, step, p, x, y) for p, x, y in diff(value, answers[step])]
    return out


# -- the reviewed list ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Accepted:
    scenario: str
    step: str       # patterns: * stands for anything, everything else for itself ([0] is an index)
    path: str
    reason: str
    pending: str = ""   # being fixed elsewhere (e.g. "issue 30"): the entry may stop matching

    def matches(self, d: Difference) -> bool:
        return all(_glob(pattern).fullmatch(value) for pattern, value in
                   ((self.scenario, d.scenario), (self.step, d.step), (self.path, d.path)))


def _glob(pattern: str) -> "re.Pattern[str]":
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.S)


def accepted(path: Path = ACCEPTED) -> list[Accepted]:
    entries = json.loads(path.read_text())
    out = []
    for e in entries:
        assert set(e) <= {"scenario", "step", "path", "reason", "pending"}, e
        assert e.get("reason", "").strip(), f"an accepted difference needs its reason: {e}"
        out.append(Accepted(e["scenario"], e["step"], e["path"], e["reason"], e.get("pending", "")))
    return out


def run(sc: Scenario, target: Target, tag: str) -> list[tuple[str, Any]]:
    """The scenario against ``target``; its answers, normalised."""
    rec = Recorder(target, tag)
    try:
        sc.run(rec)
    except (AssertionError, OSError) as e:  # what it got so far, to see where it went wrong
        answers = "\n".join(f"  {step}: {_short(value, 600)}" for step, _, value in rec.steps[-6:])
        raise AssertionError(f"{sc.name} against {target.name} stopped: {e}\nthe last answers:\n{answers}") from e
    finally:
        rec.close()
    norm = Normaliser(target, placement=sc.shape == "three")
    return [(step, norm.answer(kind, value)) for step, kind, value in rec.steps]
