"""A Kafka consumer of one partition, no group, written on kcodec: asyncio, kcodec.protocol and kcodec.records
(docs/client-guide.md).

    python examples/consumer.py --bootstrap 127.0.0.1:9092 --topic orders --count 10
    python examples/consumer.py ... --from latest --user alice --password secret --mechanism SCRAM-SHA-512

It negotiates versions with a bootstrap broker (ApiVersions), authenticates when asked (SASL), finds the
partition's leader (Metadata), asks the leader where to start (ListOffsets: the earliest or the latest
offset), then fetches (Fetch, long polling) and prints each record until it has ``--count`` of them or
``--idle`` seconds pass without new ones. Records are read from the response's bytes where they lie:
responses are not copied on the way in, and kcodec.records decodes the batches (CRC checked).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from kcodec import KcodecError
from kcodec.errors import ErrorCode, name_of
from kcodec.messages import FetchRequest, ListOffsetsRequest, MetadataRequest
from kcodec.protocol import Sasl
from kcodec.protocol.aio import AsyncConnection, open_connection
from kcodec.records import iter_batches

EARLIEST, LATEST = -2, -1  # ListOffsets' timestamps for the first and the next offset


class Failed(Exception):
    """What the broker refused, by Kafka's error name."""


async def connect(address: tuple[str, int], args: argparse.Namespace) -> AsyncConnection:
    """A connection ready for requests: versions negotiated, SASL done when a user is given. zero_copy:
    records in responses are views of the bytes received."""
    conn = await open_connection(*address, client_id="kcodec-example-consumer", zero_copy=True)
    await conn.negotiate(timeout=args.timeout)
    if args.user:
        await conn.authenticate(Sasl(args.mechanism, args.user, args.password), timeout=args.timeout)
    return conn


async def find_leader(conn: AsyncConnection, topic: str, partition: int) -> tuple[tuple[str, int], Any]:
    """(host, port) of the partition's leader, and the topic's id (Fetch v13+ names topics by id)."""
    meta = (await conn.request(MetadataRequest(topics=[MetadataRequest.Topic(name=topic)],
                                               allow_auto_topic_creation=False))).message
    brokers = {b.node_id: (b.host, b.port) for b in meta.brokers}
    (found,) = meta.topics
    for p in found.partitions if not found.error_code else []:
        if p.partition_index == partition and not p.error_code and p.leader_id in brokers:
            return brokers[p.leader_id], found.topic_id
    raise Failed(f"{topic}-{partition} has no leader: {name_of(found.error_code or ErrorCode.LEADER_NOT_AVAILABLE)}")


async def start_offset(conn: AsyncConnection, topic: str, partition: int, where: int) -> int:
    request = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=where)])])
    (answer,) = (await conn.request(request)).message.topics[0].partitions
    if answer.error_code:
        raise Failed(f"ListOffsets: {name_of(answer.error_code)}")
    return int(answer.offset)


async def consume(conn: AsyncConnection, topic: str, topic_id: Any, partition: int, offset: int,
                  args: argparse.Namespace) -> int:
    """Fetch from ``offset`` and print records; the number printed."""
    seen, idle_until = 0, time.monotonic() + args.idle
    while seen < args.count and time.monotonic() < idle_until:
        request = FetchRequest(replica_id=-1, max_wait_ms=200, min_bytes=1, max_bytes=1 << 20, topics=[
            FetchRequest.FetchTopic(topic=topic, topic_id=topic_id, partitions=[FetchRequest.FetchPartition(
                partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20)])])
        response = (await conn.request(request, timeout=args.timeout)).message
        if response.error_code:
            raise Failed(f"Fetch: {name_of(response.error_code)}")
        (data,) = response.responses[0].partitions
        if data.error_code:
            raise Failed(f"Fetch {topic}-{partition} at {offset}: {name_of(data.error_code)}")
        for batch in iter_batches(data.records or b"", zero_copy=True):  # a cut last batch is left out
            if batch.is_control:  # transaction markers take an offset and carry no data
                offset = batch.next_offset
                continue
            for record in batch:
                if record.offset < offset or seen >= args.count:
                    continue  # a batch may start before the offset asked for
                key = bytes(record.key).decode(errors="replace") if record.key is not None else None
                value = bytes(record.value).decode(errors="replace") if record.value is not None else None
                print(f"{topic}-{partition}@{record.offset} key={key} value={value}")
                seen, offset = seen + 1, record.offset + 1
                idle_until = time.monotonic() + args.idle
            offset = max(offset, batch.next_offset)
    return seen


async def run(args: argparse.Namespace) -> int:
    host, _, port = args.bootstrap.rpartition(":")
    bootstrap = await connect((host, int(port)), args)
    try:
        leader, topic_id = await find_leader(bootstrap, args.topic, args.partition)
    finally:
        await bootstrap.close()
    conn = await connect(leader, args)
    try:
        offset = await start_offset(conn, args.topic, args.partition, EARLIEST if args.start == "earliest" else LATEST)
        seen = await consume(conn, args.topic, topic_id, args.partition, offset, args)
    finally:
        await conn.close()
    print(f"consumed {seen} records from {args.topic}-{args.partition} (leader {leader[0]}:{leader[1]})")
    return 0 if seen >= args.count else 2


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", required=True, help="HOST:PORT of any broker")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int, default=0)
    p.add_argument("--count", type=int, default=10, help="records to read before stopping")
    p.add_argument("--from", dest="start", choices=["earliest", "latest"], default="earliest")
    p.add_argument("--idle", type=float, default=5.0, help="stop after this many seconds without records")
    p.add_argument("--user")
    p.add_argument("--password")
    p.add_argument("--mechanism", default="PLAIN")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds, for each request")
    args = p.parse_args(argv)
    try:
        return asyncio.run(run(args))
    except (Failed, KcodecError, OSError, asyncio.TimeoutError) as e:
        print(f"consumer: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
