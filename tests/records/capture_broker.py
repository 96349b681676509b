"""A one-node Kafka listener on 127.0.0.1 that keeps the exact `records` bytes of every Produce request.

It speaks just enough for a producer, through kcodec's framing: ApiVersions, Metadata (every topic asked
for has ``partitions`` partitions led by this node), InitProducerId (a fixed producer id, for idempotent
producers) and Produce (answered with success and running base offsets; acks=0 gets no answer). Unlike a
real broker it accepts any magic, codec or CRC: what a client writes is what is captured, so old
message formats (magic 0/1) can be captured too. Anything else closes the connection.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Optional

import kcodec
from kcodec.messages import (ApiVersionsResponse, InitProducerIdResponse, MetadataResponse, ProduceResponse)

PRODUCER_ID = 4242
# What the listener advertises: Kafka 3.7's ranges (Produce capped at v11: v12 adds nothing to the
# records, v13 drops topic names). librdkafka enables a feature (message format v2, lz4, zstd,
# idempotence) only when the broker lists every API that feature implies, Fetch and the group APIs
# among them, so those are listed though never answered.
VERSIONS = {0: (0, 11), 1: (0, 16), 2: (0, 8), 3: (0, 12), 8: (0, 9), 9: (0, 9), 10: (0, 4), 11: (0, 9),
            12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3), 19: (0, 7),
            20: (0, 6), 22: (0, 4)}
ANSWERED = {0, 3, 18, 22}


@dataclass(frozen=True)
class Captured:
    """One partition's records of one Produce request, exactly as the client framed them."""

    client_id: Optional[str]
    produce_version: int
    acks: int
    transactional_id: Optional[str]
    topic: str
    partition: int
    records: bytes


class CaptureBroker:
    """``with CaptureBroker() as b:`` point a producer at ``b.bootstrap``; read ``b.captured``."""

    def __init__(self, partitions: int = 1) -> None:
        self.partitions = partitions
        self.captured: list[Captured] = []
        self.requests: list[tuple[str, int]] = []  # (api, version) in arrival order
        self._offsets: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()
        self._server: Optional[socketserver.ThreadingTCPServer] = None
        self._thread: Optional[threading.Thread] = None

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return int(self._server.server_address[1])

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> CaptureBroker:
        broker = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                broker._serve(self.request)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="capture-broker", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def records(self, topic: str, partition: int = 0) -> bytes:
        """Every batch captured for one partition, in arrival order: itself a valid `records` field."""
        with self._lock:
            return b"".join(c.records for c in self.captured if (c.topic, c.partition) == (topic, partition))

    # -- the wire ----------------------------------------------------------------------------------------
    def _serve(self, sock: socket.socket) -> None:
        sock.settimeout(30)
        splitter = kcodec.FrameSplitter()
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    return
                for frame in splitter.feed(data):
                    out = self._answer(frame)
                    if out is None:
                        continue
                    if not out:
                        return
                    sock.sendall(out)
        except (OSError, kcodec.DecodeError):
            return

    def _answer(self, frame: bytes) -> Optional[bytes]:
        """The response frame; None for no answer (acks=0); b"" to close the connection."""
        header, _, _ = kcodec.decode_request_header(frame)
        key, version = header.request_api_key, header.request_api_version
        if key == 18 and version > VERSIONS[18][1]:  # Kafka's answer: the v0 layout, UNSUPPORTED_VERSION
            return kcodec.encode_response(ApiVersionsResponse(error_code=35, api_keys=self._api_keys()), 0,
                                          header.correlation_id)
        if key not in ANSWERED or not VERSIONS[key][0] <= version <= VERSIONS[key][1]:
            return b""
        _, req = kcodec.decode_request(frame)
        with self._lock:
            self.requests.append((type(req).__name__, version))
        if key == 18:
            resp: Any = ApiVersionsResponse(api_keys=self._api_keys())
        elif key == 3:
            resp = self._metadata(req)
        elif key == 22:
            resp = InitProducerIdResponse(producer_id=PRODUCER_ID, producer_epoch=0)
        else:
            resp = self._produce(req, header.client_id, version)
            if req.acks == 0:
                return None
        return kcodec.encode_response(resp, version, header.correlation_id)

    @staticmethod
    def _api_keys() -> list[ApiVersionsResponse.ApiVersion]:
        return [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                for k, (lo, hi) in VERSIONS.items()]

    def _metadata(self, req: Any) -> MetadataResponse:
        with self._lock:
            known = sorted({t for t, _ in self._offsets})
        names = known if req.topics is None else [t.name for t in req.topics]
        topics = [MetadataResponse.Topic(name=n, topic_id=uuid.uuid5(uuid.NAMESPACE_URL, n), partitions=[
            MetadataResponse.Partition(partition_index=p, leader_id=0, leader_epoch=0, replica_nodes=[0],
                                       isr_nodes=[0]) for p in range(self.partitions)]) for n in names]
        return MetadataResponse(brokers=[MetadataResponse.Broker(node_id=0, host="127.0.0.1", port=self.port)],
                                cluster_id="kcodec-capture", controller_id=0, topics=topics)

    def _produce(self, req: Any, client_id: Optional[str], version: int) -> ProduceResponse:
        responses = []
        with self._lock:
            for t in req.topic_data:
                parts = []
                for p in t.partition_data:
                    records = bytes(p.records or b"")
                    self.captured.append(Captured(client_id, version, req.acks, req.transactional_id, t.name,
                                                  p.index, records))
                    base = self._offsets.get((t.name, p.index), 0)
                    self._offsets[(t.name, p.index)] = base + 1  # one offset per request is enough here
                    parts.append(ProduceResponse.PartitionProduceResponse(index=p.index, base_offset=base))
                responses.append(ProduceResponse.TopicProduceResponse(name=t.name, partition_responses=parts))
        return ProduceResponse(responses=responses)
