"""Real admin traffic for the end-to-end path (the showcase's ``traffic`` step, tests/test_e2e.py).

A ``kcodec_broker`` Cluster of several brokers (SASL PLAIN on), ``kcodec tap`` in front of it (the
command, a child process) and three admin clients administering topics through the tap:
confluent-kafka's AdminClient, kafka-python's KafkaAdminClient and kcodec's own client. Each runs a
script (create with explicit settings and with the broker's KIP-464 defaults, list, describe, add
partitions, delete, and calls that fail) and keeps the error codes it was told; then confluent-kafka's
idempotent producer writes records with every compression codec (acks=all), counting what was
acknowledged, and a confluent-kafka consumer, a static member of a group, reads them all back and commits. The broker counts the requests it answered per client id. Both are what an analysis of the capture must agree with
(``kcodec.showcase.e2e``). A client library that is not installed is left out, and said so.
"""

from __future__ import annotations

import dataclasses
import gc
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from kcodec.errors import ErrorCode

CK, KPY, KC = "e2e-confluent", "e2e-kafka-python", "e2e-kcodec"  # client ids, one per client
CKP = "e2e-confluent-producer"
CKC, GROUP = "e2e-confluent-consumer", "e2e-orders"
DATA_TOPIC, DATA_RECORDS = "ck-orders", 200  # records produced per compression codec
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
USER, PASSWORD = "e2e", "e2e-secret"
TIMEOUT = 15.0  # seconds, per admin call
BROKER_PACKAGE = "kcodec_broker"  # the cluster: the distribution kcodec-broker, imported by drive() alone


@dataclasses.dataclass
class Traffic:
    """What happened: where the capture is, what each client was told, what the broker answered."""

    capture_dir: Path
    brokers: list[tuple[str, int]]                   # the cluster's addresses (upstream of the tap)
    background_topics: int
    clients: dict[str, str] = dataclasses.field(default_factory=dict)   # client id -> library and version
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)   # library -> why it did not run
    errors: dict[str, Counter[tuple[str, int]]] = dataclasses.field(default_factory=dict)  # (API, code) told
    served: dict[str, Counter[tuple[str, int]]] = dataclasses.field(default_factory=dict)  # (API, version)
    kcodec_sent: Counter[tuple[str, int]] = dataclasses.field(default_factory=Counter)     # its own count
    produced: Counter[tuple[str, str]] = dataclasses.field(default_factory=Counter)  # (topic, codec): acked
    consumed: Counter[tuple[str, str]] = dataclasses.field(default_factory=Counter)  # (topic, codec): read back
    committed: dict[int, int] = dataclasses.field(default_factory=dict)             # partition -> next offset
    tap_summary: str = ""
    seconds: float = 0.0

    @property
    def files(self) -> list[Path]:
        return sorted(self.capture_dir.glob("*.kcap"))


def _told(traffic: Traffic, client: str, api: str, code: int) -> None:
    traffic.errors.setdefault(client, Counter())[(api, code)] += 1


def _confluent(bootstrap: str, t: Traffic) -> None:
    import confluent_kafka as ck
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    t.clients[CK] = f"confluent-kafka {ck.__version__} (librdkafka {ck.libversion()[0]})"
    t.errors.setdefault(CK, Counter())
    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": CK, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "PLAIN", "sasl.username": USER, "sasl.password": PASSWORD,
                         "log_level": 2})

    def each(api: str, futures: dict[str, Any]) -> None:
        for f in futures.values():
            try:
                f.result(timeout=TIMEOUT)
            except KafkaException as e:
                _told(t, CK, api, e.args[0].code())

    each("CreateTopics", admin.create_topics([NewTopic("ck-orders", 6, 2, config={"cleanup.policy": "compact"}),
                                              NewTopic("ck-defaults")], request_timeout=TIMEOUT))  # KIP-464
    each("CreateTopics", admin.create_topics([NewTopic("ck-orders", 6, 2)], request_timeout=TIMEOUT))
    each("CreateTopics", admin.create_topics([NewTopic("ck-too-many-replicas", 1, 9)], request_timeout=TIMEOUT))
    for _ in range(2):
        if "ck-orders" not in admin.list_topics(timeout=TIMEOUT).topics:  # Metadata for every topic
            raise AssertionError("confluent-kafka does not list ck-orders")
    each("CreatePartitions", admin.create_partitions([NewPartitions("ck-orders", 8)], request_timeout=TIMEOUT))
    each("DeleteTopics", admin.delete_topics(["ck-defaults"], operation_timeout=5, request_timeout=TIMEOUT))
    del admin  # librdkafka's threads stop (and its last requests end) when the handle is destroyed
    gc.collect()
    _confluent_produce(bootstrap, t)


def _confluent_produce(bootstrap: str, t: Traffic) -> None:
    """The data path: an idempotent producer (librdkafka's default once asked) per codec, acks=all."""
    from confluent_kafka import Producer

    t.clients[CKP] = t.clients[CK]
    for codec in CODECS:
        acked: list[bool] = []
        p = Producer({"bootstrap.servers": bootstrap, "client.id": CKP, "security.protocol": "SASL_PLAINTEXT",
                      "sasl.mechanism": "PLAIN", "sasl.username": USER, "sasl.password": PASSWORD,
                      "acks": "all", "enable.idempotence": True, "compression.type": codec, "linger.ms": 5,
                      "log_level": 2})
        for i in range(DATA_RECORDS):
            p.produce(DATA_TOPIC, value=f"{codec} order {i:05d} ".encode() * 4, key=f"k{i % 16}".encode(),
                      on_delivery=lambda err, _msg: acked.append(err is None))
        if p.flush(TIMEOUT) != 0 or not all(acked):
            raise AssertionError(f"confluent-kafka: {acked.count(True)} of {DATA_RECORDS} {codec} records acknowledged")
        t.produced[(DATA_TOPIC, codec)] += len(acked)
        del p  # the handle closes its connections when destroyed
        gc.collect()
    _confluent_consume(bootstrap, t)


def _confluent_consume(bootstrap: str, t: Traffic) -> None:
    """The read path: a static member of a group (classic protocol, KIP-345) reads every record back and
    commits. Static: a dynamic member's first JoinGroup is answered MEMBER_ID_REQUIRED (KIP-394), a step
    librdkafka takes without telling its caller, which the check against what clients were told would
    have to special-case."""
    from confluent_kafka import Consumer, TopicPartition

    t.clients[CKC] = t.clients[CK]
    c = Consumer({"bootstrap.servers": bootstrap, "client.id": CKC, "group.id": GROUP,
                  "group.instance.id": f"{GROUP}-0",
                  "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": USER,
                  "sasl.password": PASSWORD, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100, "log_level": 2})
    try:
        c.subscribe([DATA_TOPIC])
        want = sum(n for (topic, _), n in t.produced.items() if topic == DATA_TOPIC)
        seen: set[tuple[int, int]] = set()
        deadline = time.monotonic() + 4 * TIMEOUT
        while len(seen) < want and time.monotonic() < deadline:
            for m in c.consume(num_messages=500, timeout=0.5):
                part, offset, value = m.partition(), m.offset(), m.value()
                if m.error() is None and part is not None and offset is not None and (part, offset) not in seen:
                    seen.add((part, offset))
                    t.consumed[(DATA_TOPIC, (value or b"").split(b" ", 1)[0].decode())] += 1
        if len(seen) < want:
            raise AssertionError(f"confluent-kafka's consumer read {len(seen)} of {want} records")
        ends: dict[int, int] = {}
        for part, offset in seen:
            ends[part] = max(ends.get(part, 0), offset + 1)
        c.commit(offsets=[TopicPartition(DATA_TOPIC, p, o) for p, o in sorted(ends.items())], asynchronous=False)
        t.committed = dict(sorted(ends.items()))
        # Stop fetching and let the last long poll come back (fetch.wait.max.ms) before leaving, so that
        # every request this consumer sent has its answer in the capture.
        c.pause(c.assignment())
        time.sleep(0.5)
    finally:
        c.close()  # a static member does not send LeaveGroup: its place waits for the session timeout


def _kafka_python(bootstrap: str, t: Traffic) -> None:
    import kafka
    from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
    from kafka.errors import KafkaError

    t.clients[KPY] = f"kafka-python {kafka.__version__}"
    t.errors.setdefault(KPY, Counter())
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=KPY, request_timeout_ms=int(TIMEOUT * 1000),
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                             sasl_plain_username=USER, sasl_plain_password=PASSWORD)

    def told(api: str, call: Callable[[], Any]) -> None:
        try:
            call()
        except KafkaError as e:
            _told(t, KPY, api, int(e.errno))

    try:
        # First a listing: the cluster has not changed since kcodec's last ListTopics (see CLIENTS).
        for _ in range(3):
            if "kc-orders" not in admin.list_topics():  # Metadata for every topic
                raise AssertionError("kafka-python does not list kc-orders")
        admin.create_topics([NewTopic("kp-orders", 4, 2), NewTopic("kp-defaults", -1, -1)])  # KIP-464
        told("CreateTopics", lambda: admin.create_topics([NewTopic("kp-orders", 4, 2)], raise_errors=True))
        admin.describe_topics(["kp-orders"])
        admin.create_partitions({"kp-orders": NewPartitions(6)})
        admin.delete_topics(["kp-defaults"])
        told("DeleteTopics", lambda: admin.delete_topics(["__consumer_offsets"], raise_errors=True))
    finally:
        admin.close()


def _kcodec(bootstrap: str, t: Traffic) -> None:
    import kcodec
    from kcodec.client import NewTopic, SyncClient

    t.clients[KC] = f"kcodec {kcodec.__version__}"
    t.errors.setdefault(KC, Counter())
    # 50 partitions a page: describing every topic takes many DescribeTopicPartitions pages.
    with SyncClient(bootstrap, client_id=KC, sasl_user=USER, sasl_password=PASSWORD, request_timeout=TIMEOUT,
                    partition_limit=50) as c:
        def told(api: str, results: list[Any]) -> None:
            for r in results:
                if r.error != ErrorCode.NONE:
                    _told(t, KC, api, int(r.error))

        told("CreateTopics", c.create_topics([NewTopic("kc-orders", 12, 3), NewTopic("kc-defaults")]))  # KIP-464
        told("CreateTopics", c.create_topics(["kc-orders"]))
        names = {x.name for x in c.list_topics()}  # ListTopics (KIP-142), internal topics left out
        if "kc-orders" not in names or "__consumer_offsets" in names:
            raise AssertionError("kcodec's ListTopics misses kc-orders or shows internal topics")
        described = c.describe_topics()  # every topic, DescribeTopicPartitions page by page
        if not any(d.name == "kc-orders" and len(d.partitions) == 12 for d in described):
            raise AssertionError("kcodec's DescribeTopicPartitions misses kc-orders' 12 partitions")
        told("CreatePartitions", c.create_partitions({"kc-orders": 16}))
        told("CreatePartitions", c.create_partitions({"kc-orders": 4}))  # fewer: INVALID_PARTITIONS
        told("DescribeConfigs", c.describe_configs(["kc-orders"]))
        told("DeleteTopics", c.delete_topics(["kc-defaults", "kc-never-made"]))
        # Last, every topic with internal ones: what an all-topics Metadata response lists. kafka-python
        # asks for that next, so its what-if ListTopics bytes can be checked against these real ones.
        if "__consumer_offsets" not in {x.name for x in c.list_topics(internal=True)}:
            raise AssertionError("kcodec's ListTopics(internal) misses __consumer_offsets")
        t.kcodec_sent = Counter(c.client.requests_sent)


# In this order: kcodec's script ends with a ListTopics and kafka-python's starts with Metadata listings.
CLIENTS: list[tuple[str, str, Callable[[str, Traffic], None]]] = [
    ("confluent-kafka", "confluent_kafka", _confluent),
    ("kcodec", "kcodec.client", _kcodec),
    ("kafka-python", "kafka", _kafka_python),
]


def background_topic(i: int) -> tuple[str, int]:
    """Name and partition count of the i-th topic the cluster starts with: names of 20-40 characters."""
    areas = ("payments", "orders", "inventory", "shipping", "customer-profiles", "audit")
    return f"{areas[i % len(areas)]}.events.v{1 + i % 3}-{i:05d}" + "x" * (i % 9), 1 + i % 8


def drive(out: Path, *, brokers: int = 3, background_topics: int = 300,
          log: Callable[[str], None] = lambda _: None) -> Traffic:
    """Start the cluster and the tap, run every installed client through it, stop both; what happened."""
    import importlib.util

    from kcodec.tap.process import tap_process
    from kcodec_broker import Cluster  # the distribution kcodec-broker: traffic_step skips without it

    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.kcap"):
        old.unlink()
    started = time.perf_counter()
    with Cluster(brokers=brokers, num_partitions=3, default_replication_factor=2, system_topic_partitions=10,
                 auto_create_topics=False, users={USER: PASSWORD}) as cluster:
        for i in range(background_topics):
            name, partitions = background_topic(i)
            cluster.create_topic(name, partitions, min(2, brokers))
        traffic = Traffic(out, cluster.addresses, background_topics)
        # Bootstrap at the last broker: admin requests go to the controller (the first), so clients
        # must follow the tap's rewritten addresses to another listener.
        host, port = cluster.addresses[-1]
        log(f"kcodec broker: {brokers} brokers at {cluster.bootstrap}, {background_topics} topics, SASL PLAIN")
        with tap_process(f"{host}:{port}", out) as tap:
            log(f"kcodec tap: {tap.banner.strip()}")
            for library, module, fn in CLIENTS:
                if importlib.util.find_spec(module) is None:
                    traffic.skipped[library] = f"{library} is not installed"
                    log(f"{library}: not installed, skipped")
                    continue
                t = time.perf_counter()
                fn(tap.bootstrap, traffic)
                log(f"{library}: done in {time.perf_counter() - t:.1f} s")
            traffic.tap_summary = tap.stop().strip()
        traffic.served = cluster.requests_served()
    traffic.seconds = time.perf_counter() - started
    log(f"kcodec tap {traffic.tap_summary}")
    return traffic


def told_errors(traffic: Traffic) -> dict[str, dict[str, list[int]]]:
    """{client id: {API: sorted error codes}} the clients were told."""
    out: dict[str, dict[str, list[int]]] = {}
    for client, codes in traffic.errors.items():
        mine = out.setdefault(client, {})
        for (api, code), n in codes.items():
            mine.setdefault(api, []).extend([code] * n)
    return {c: {a: sorted(v) for a, v in apis.items()} for c, apis in out.items()}
