"""A Kafka producer written on kcodec: blocking sockets, kcodec.protocol and kcodec.records (docs/client-guide.md).

    python examples/producer.py --bootstrap 127.0.0.1:9092 --topic orders --count 10
    python examples/producer.py ... --user alice --password secret --mechanism SCRAM-SHA-256

It negotiates versions with a bootstrap broker (ApiVersions), authenticates when asked (SASL), finds the
partition's leader (Metadata: a broker that auto-creates topics makes it), connects to the leader, writes
the records as one v2 batch (kcodec.records) and sends it with acks=all (Produce), retrying while the
broker says the partition is not ready. It prints the offset the broker gave the first record.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from kcodec import KcodecError
from kcodec.errors import ErrorCode, is_retriable, name_of
from kcodec.messages import MetadataRequest, ProduceRequest
from kcodec.protocol import Sasl
from kcodec.protocol.blocking import BlockingConnection
from kcodec.records import BatchBuilder, Compression


class Failed(Exception):
    """What the broker refused: Kafka's error code, by name."""

    def __init__(self, code: int) -> None:
        super().__init__(name_of(code))
        self.code = code


def connect(address: tuple[str, int], args: argparse.Namespace) -> BlockingConnection:
    """A connection ready for requests: versions negotiated, SASL done when a user is given."""
    conn = BlockingConnection.connect(*address, timeout=args.timeout, client_id="kcodec-example-producer")
    conn.negotiate()  # from now on each request goes at the highest version both sides speak
    if args.user:
        conn.authenticate(Sasl(args.mechanism, args.user, args.password))
    return conn


def find_leader(conn: BlockingConnection, topic: str, partition: int) -> tuple[tuple[str, int], Any]:
    """(host, port) of the partition's leader, and the topic's id (Produce v13 names topics by id)."""
    meta = conn.request(MetadataRequest(topics=[MetadataRequest.Topic(name=topic)],
                                        allow_auto_topic_creation=True)).message
    brokers = {b.node_id: (b.host, b.port) for b in meta.brokers}
    (found,) = meta.topics
    if found.error_code:
        raise Failed(found.error_code)
    for p in found.partitions:
        if p.partition_index == partition:
            if p.error_code or p.leader_id not in brokers:
                raise Failed(p.error_code or ErrorCode.LEADER_NOT_AVAILABLE)
            return brokers[p.leader_id], found.topic_id
    raise Failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def batch(args: argparse.Namespace) -> bytes:
    """The records, one v2 RecordBatch (CRC32C, compression and offsets deltas done by kcodec.records)."""
    builder = BatchBuilder(compression=Compression[args.compression.upper()])
    for i in range(args.count):
        builder.append(f"key-{i % 4}".encode(), f"{args.message} #{i}".encode(), headers=[("seq", str(i).encode())])
    return builder.build()  # type: ignore[no-any-return]


def produce(conn: BlockingConnection, topic: str, topic_id: Any, partition: int, records: bytes,
            timeout_ms: int) -> int:
    """Send the batch with acks=all; the base offset the broker assigned."""
    request = ProduceRequest(acks=-1, timeout_ms=timeout_ms, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, topic_id=topic_id,  # (each version writes the one it has)
        partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)])])
    response = conn.request(request).message  # the batch goes out as it is: sendmsg, no copy of it
    (answer,) = response.responses[0].partition_responses
    if answer.error_code:
        raise Failed(answer.error_code)
    return int(answer.base_offset)


def retrying(what: Any, deadline: float) -> Any:
    """Call ``what`` until it succeeds, while the broker's error is one Kafka calls retriable."""
    while True:
        try:
            return what()
        except Failed as e:
            if not is_retriable(e.code) or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", required=True, help="HOST:PORT of any broker")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int, default=0)
    p.add_argument("--count", type=int, default=10, help="records to send")
    p.add_argument("--message", default="hello from kcodec", help="the records' values (each numbered)")
    p.add_argument("--compression", default="none", choices=[c.name.lower() for c in Compression])
    p.add_argument("--user")
    p.add_argument("--password")
    p.add_argument("--mechanism", default="PLAIN")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds, for each step")
    args = p.parse_args(argv)
    host, _, port = args.bootstrap.rpartition(":")
    deadline = time.monotonic() + args.timeout
    try:
        with connect((host, int(port)), args) as bootstrap:
            leader, topic_id = retrying(lambda: find_leader(bootstrap, args.topic, args.partition), deadline)
        with connect(leader, args) as conn:
            records = batch(args)
            offset = retrying(lambda: produce(conn, args.topic, topic_id, args.partition, records,
                                              int(args.timeout * 1000)), deadline)
    except (Failed, KcodecError, OSError) as e:  # the broker's refusal, SASL's, the protocol's, the network's
        print(f"producer: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(f"produced {args.count} records to {args.topic}-{args.partition} at offset {offset} "
          f"(leader {leader[0]}:{leader[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
