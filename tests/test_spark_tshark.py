"""`kcodec analyze` against tshark's Kafka dissector on a real capture: tcpdump on loopback while
confluent-kafka produces (LZ4 batches), consumes in a group and lists topics against `kcodec broker`.

Every request tshark dissects, kcodec finds with the same correlation id, API key and version; every
request/response pair tshark links (``kafka.request_frame``), kcodec pairs too. What kcodec finds beyond
tshark is explained: tshark 4.0's dissector marks many packets of modern versions malformed and links
only some answers to their requests (here it finds every request but links fewer pairs), and a request
it could not dissect would be one of those malformed packets.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from needs import missing, need_tool

import kafka_upstream as ku

pytestmark = [pytest.mark.spark, pytest.mark.interop]

MESSAGES = 3000
FIELDS = ("frame.number", "tcp.srcport", "tcp.dstport", "kafka.correlation_id", "kafka.request_key",
          "kafka.api_version", "kafka.request_frame", "_ws.malformed")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    tcpdump = need_tool("tcpdump", "`make test` installs it (apt-get install tcpdump)")
    base = tmp_path_factory.mktemp("tshark")
    port = ku.free_port()
    broker = subprocess.Popen([sys.executable, "-m", "kcodec", "broker", "--listen", f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ku.wait_for_port("127.0.0.1", port, broker)
        user = ["-Z", "root"] if os.geteuid() == 0 else []
        dump = subprocess.Popen([tcpdump, "-i", "lo", "--immediate-mode", "-U", "-s", "0", "-B", "65536", *user, "-w",
                                 str(base / "kafka.pcap"), "tcp port", str(port)], stderr=subprocess.PIPE, text=True)
        try:
            assert dump.stderr is not None
            line = dump.stderr.readline()
            if "listening" not in line:
                missing(f"tcpdump cannot capture on loopback here: {line.strip()}")
            bootstrap = f"127.0.0.1:{port}"
            admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "ts-admin"})
            admin.create_topics([NewTopic("ts", 2, 1)])["ts"].result(15)
            p = Producer({"bootstrap.servers": bootstrap, "client.id": "ts-producer", "compression.type": "lz4",
                          "linger.ms": 5})
            for i in range(MESSAGES):
                p.produce("ts", b"value %d" % i)
                if i % 500 == 0:
                    p.flush(10)
            assert p.flush(15) == 0
            assert "ts" in admin.list_topics(timeout=10).topics
            c = Consumer({"bootstrap.servers": bootstrap, "client.id": "ts-consumer", "group.id": "ts-group",
                          "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100})
            c.subscribe(["ts"])
            got, deadline = 0, time.monotonic() + 60
            while got < MESSAGES and time.monotonic() < deadline:
                got += sum(1 for m in c.consume(1000, 0.5) if m.error() is None)
            c.close()
            del admin, p
            assert got == MESSAGES
            time.sleep(1.0)  # the last packets into the file before tcpdump stops
        finally:
            ku.stop(dump, signal.SIGINT)
    finally:
        ku.stop(broker)
    return base / "kafka.pcap", port


def _tshark(path, port):
    tshark = need_tool("tshark", "`make test` installs it (Debian's tshark)")
    fields = [a for f in FIELDS for a in ("-e", f)]
    out = subprocess.run([tshark, "-n", "-r", str(path), "-d", f"tcp.port=={port},kafka", "-Y", "kafka", "-T", "fields",
                          *fields, "-E", "occurrence=a", "-E", "separator=|"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    requests, pairs, malformed = Counter(), set(), 0
    by_frame = {}
    rows = [line.split("|") for line in out.stdout.splitlines()]
    for frame, sport, dport, corrs, keys, versions, request_frames, bad in rows:
        malformed += bool(bad)
        if int(dport) == port:  # client -> broker: requests
            client = int(sport)
            for corr, key, version in zip(corrs.split(","), keys.split(","), versions.split(",")):
                requests[(client, int(corr), int(key), int(version))] += 1
                by_frame.setdefault(int(frame), []).append((client, int(corr)))
    for frame, sport, dport, corrs, keys, versions, request_frames, bad in rows:
        if int(sport) == port and request_frames:
            for corr, req in zip(corrs.split(","), request_frames.split(",")):
                if req and (int(dport), int(corr)) in by_frame.get(int(req), []):
                    pairs.add((int(dport), int(corr)))
    return requests, pairs, malformed


def test_requests_and_pairs_as_tshark_finds_them(recorded, spark, tmp_path):
    from kcodec.spark import pipeline

    path, port = recorded
    theirs, their_pairs, malformed = _tshark(path, port)
    written = pipeline.write_tables(spark, [str(path)], str(tmp_path / "tables"), ports=[port])
    ex = spark.read.parquet(str(tmp_path / "tables" / "exchanges")).toPandas()
    assert ex.decode_error.isna().all(), ex.decode_error.dropna().tolist()[:5]
    client = ex.conn.str.extract(r":(\d+)-")[0].astype(int)
    ours = Counter(zip(client, ex.correlation_id.astype(int), ex.api_key.astype(int), ex.api_version.astype(int)))
    # Every request tshark dissected, kcodec found: same client, correlation id, API and version.
    assert not theirs - ours, theirs - ours
    # What kcodec found beyond: requests tshark did not dissect (it marks such frames malformed).
    beyond = ours - theirs
    assert sum(beyond.values()) <= malformed + sum(theirs.values()) // 10, (beyond, malformed)
    # Every pair tshark links, kcodec pairs the same way (same connection and correlation id, answered).
    answered = set(zip(client[ex.pairing == "answered"], ex.correlation_id[ex.pairing == "answered"].astype(int)))
    assert their_pairs and their_pairs <= answered, their_pairs - answered
    assert written["aggregates"]["total"]["orphan_responses"] == 0
