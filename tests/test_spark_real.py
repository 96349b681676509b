"""Real captures of real clients, through the tap and through tcpdump, whole and rotated, in one Spark job.

confluent-kafka, kafka-python, aiokafka and kafkajs produce (acks=0 too, one message a request) and
consume (in groups where Tansu lets them) through `kcodec tap` to Tansu, while two tcpdumps on
loopback record the tap's upstream leg: one whole, one rotated every second (``-G 1``). A second
capture reusing the same address pairs (the whole one with its TCP sequence numbers and clock moved)
joins them in the job. Each capture must give the same exchanges, request for request, with no orphan,
and the Produce requests each client sent per acks setting (counted on the client's side).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import subprocess
import time
from collections import Counter

import pytest
from needs import missing

import kafka_upstream as ku
import pcap_writer
import real_traffic

pytestmark = [pytest.mark.spark, pytest.mark.interop]


def _tcpdump(port: int, *args: str) -> subprocess.Popen:
    tcpdump = shutil.which("tcpdump")
    if tcpdump is None:
        missing("no tcpdump")
    # --immediate-mode: without it the kernel hands packets over about once a second, after we stopped.
    # -Z root: as root, tcpdump would otherwise become user tcpdump, who cannot open the rotated files.
    user = ["-Z", "root"] if os.geteuid() == 0 else []
    # -B: a 64 MiB kernel buffer, so that a tcpdump starved of CPU on a loaded machine drops nothing.
    proc = subprocess.Popen([tcpdump, "-i", "lo", "--immediate-mode", "-U", "-s", "0", "-B", "65536", *user, *args,
                             "tcp port", str(port)],
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    if "listening" not in line:
        ku.stop(proc, signal.SIGINT)
        missing(f"tcpdump cannot capture on loopback here: {line.strip()}")
    return proc


# What each tcpdump said at its end ("N packets dropped by kernel"): a failure of the exact comparisons
# names it, since a dropped packet is the machine's doing, not the reader's.
_TCPDUMP_END: dict[str, str] = {}


def _stopped(name: str, proc: subprocess.Popen) -> None:
    ku.stop(proc, signal.SIGINT)
    assert proc.stderr is not None
    _TCPDUMP_END[name] = " ".join(line.strip() for line in proc.stderr if "packets" in line)


def _quiet(port: int, deadline: float) -> None:
    """Wait until no connection to the broker's port is open: the tap closes its upstream legs when its
    clients leave, but the broker may still answer on a half-closed one (a long-polling Fetch answered at
    its max wait), and such a late answer must be on the wire before the captures are cut."""
    ours = f":{port:04X}"
    while True:
        open_ = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                lines = open(table).read().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                local, remote, state = line.split()[1:4]
                # 06 TIME_WAIT and 0A LISTEN carry no more data; anything else may.
                if (local.endswith(ours) or remote.endswith(ours)) and state not in ("06", "0A"):
                    open_.append(line)
        if not open_ or time.monotonic() > deadline:
            return
        time.sleep(0.1)


def _drained(port: int, *directories, timeout: float = 20.0) -> None:
    """Wait until every tcpdump has written all it saw: a last connection to the broker, opened after
    the traffic, must be in each capture (tcpdump stopped earlier drops what it had not read yet)."""
    _quiet(port, time.monotonic() + timeout / 2)
    with socket.create_connection(("127.0.0.1", port)) as s:
        mark = struct.pack(">HH", s.getsockname()[1], port)
    deadline = time.monotonic() + timeout
    while not all(any(mark in p.read_bytes() for p in d.iterdir()) for d in directories):
        assert time.monotonic() < deadline, "tcpdump did not write the last packets"
        time.sleep(0.2)


def _moved(path, out):
    """The same packets with other TCP sequence numbers and an hour later: a second capture of the same
    address pairs (and correlation ids), which must stay apart from the first."""
    import dpkt

    with open(path, "rb") as f:
        packets = []
        for ts, buf in dpkt.pcap.Reader(f):
            eth = dpkt.ethernet.Ethernet(buf)
            tcp = eth.data.data
            tcp.seq, tcp.ack = (tcp.seq + 123_456_789) % (1 << 32), (tcp.ack + 123_456_789) % (1 << 32)
            packets.append((float(ts) + 3600, bytes(eth)))
    return pcap_writer.write(out, packets)


@pytest.fixture(scope="module")
def captured(tmp_path_factory, kafka_upstream):
    base = tmp_path_factory.mktemp("real")
    for d in ("kcap", "whole", "rot", "second"):
        (base / d).mkdir()
    did = {}
    started = time.monotonic()
    whole = _tcpdump(kafka_upstream.port, "-w", str(base / "whole" / "kafka.pcap"))
    try:
        rotated = _tcpdump(kafka_upstream.port, "-G", "1", "-w", str(base / "rot" / "kafka-%Y%m%d-%H%M%S.pcap"))
        try:
            with ku.tap(kafka_upstream.address, base / "kcap") as t:
                did = real_traffic.run_all(t.bootstrap)
                t.stop()
            _drained(kafka_upstream.port, base / "whole", base / "rot")
        finally:
            _stopped("rot", rotated)
    finally:
        _stopped("whole", whole)
    _moved(base / "whole" / "kafka.pcap", base / "second" / "again.pcap")
    print(f"clients: {time.monotonic() - started:.1f} s")
    return base, did


@pytest.fixture(scope="module")
def exchanges(spark, captured, kafka_upstream):
    """`kcodec analyze` over the four captures in one job: its tables and its report."""
    from kcodec.spark.analyze import analyze

    base, _ = captured
    started = time.monotonic()
    lines: list[str] = []
    agg = analyze(spark, [str(base / d) for d in ("kcap", "whole", "rot", "second")], base / "report",
                  ports=[kafka_upstream.port], print_=lambda *a, **k: lines.append(" ".join(map(str, a))))
    ex = spark.read.parquet(str(base / "report" / "tables" / "exchanges")).toPandas()
    files = spark.read.parquet(str(base / "report" / "tables" / "files")).toPandas()
    print(f"spark: {time.monotonic() - started:.1f} s")
    return ex, files, agg, (base / "report" / "report.md").read_text(), lines


@pytest.fixture(scope="module")
def batches(exchanges, captured, spark):
    """The batches table of the same job: a row per record batch of every Produce request and Fetch response."""
    base, _ = captured
    rb = spark.read.parquet(str(base / "report" / "tables" / "batches")).toPandas()
    return rb.assign(kind=rb.capture.map(_kind))


def _kind(capture: str) -> str:
    return "kcap" if capture.startswith("tap-") else capture.split("/")[-2]


def test_every_capture_gives_the_same_exchanges(exchanges, captured):
    ex, files, _, _, _ = exchanges
    base, _ = captured
    assert len(list((base / "rot").iterdir())) >= 2  # tcpdump rotated
    ex = ex.assign(kind=ex.capture.map(_kind))
    assert set(ex.kind) == {"kcap", "whole", "rot", "second"} and ex.capture.nunique() == 4
    assert ex.decode_error.isna().all(), ex.decode_error.dropna().tolist()[:5]
    assert not (ex.pairing.isin(["orphan", "overtaken"])).any(), Counter(zip(ex.kind, ex.pairing))
    cols = ["client_id", "api_key", "api_version", "request_bytes", "response_bytes", "pairing", "error_count"]
    key = {k: Counter(tuple(None if v != v else v for v in row) for row in g[cols].itertuples(index=False))
           for k, g in ex.groupby("kind")}
    assert key["rot"] == key["whole"] and key["second"] == key["whole"], _TCPDUMP_END  # tcpdump's views: alike
    # The tap's view: the same requests. A response the broker sent after the client had closed (a consumer
    # leaving with a Fetch in flight, aiokafka and kafka-python dropping a connection when Tansu answers
    # acks=0) crossed the wire, so tcpdump has it; the tap records it too unless it came later than
    # --drain-seconds or the tap was stopped first, so the two views may still differ there.
    req = cols[:4]
    tap, pcap = (Counter(map(tuple, ex[ex.kind == k][req].itertuples(index=False))) for k in ("kcap", "whole"))
    assert tap == pcap
    waiting = ("unanswered", "no_response")
    tap_only = key["kcap"] - key["whole"]
    pcap_only = key["whole"] - key["kcap"]
    assert {k[5] for k in tap_only} <= set(waiting) and {k[5] for k in pcap_only} <= {"answered", "acks0_answered"}
    assert sum(tap_only.values()) == sum(pcap_only.values())
    kc = ex[ex.kind == "kcap"].sort_values("exchange")
    at_the_end = sum(len(g) - 1 - max([i for i, p in enumerate(g.pairing) if p not in waiting], default=-1)
                     for _, g in kc.groupby("conn"))
    assert sum(tap_only.values()) <= at_the_end
    # Connections: as many in each capture as the tap opened upstream, never merged across captures.
    conns = ex.groupby("kind").conn.nunique()
    assert conns["whole"] == conns["rot"] == conns["second"] == conns["kcap"] and ex.conn.nunique() == 4 * conns["kcap"]
    summaries = files[~files.summary.str.contains('"kind": "kcap"')].summary
    assert summaries.str.contains('"skipped_bytes": 0,').all() and summaries.str.contains('"gap_bytes": 0,').all()


def test_produce_requests_are_what_each_client_sent(exchanges, captured):
    ex, _, _, _, _ = exchanges
    _, did = captured
    prod = ex[(ex.api_name == "Produce") & ex.capture.str.startswith("tap-")]
    by = Counter(zip(prod.client_id, prod.pairing))
    n = real_traffic.N
    # One message a request; Tansu answers acks=0 (Kafka would not), and the answers read are flagged.
    # librdkafka and kafkajs shrug them off; aiokafka and kafka-python drop the connection at the first
    # (it expected none), so the answers to acks=0 requests already sent on it are never read, and a
    # request the client had queued on that connection may never leave it (acks=0 sends report success
    # once queued): at most n there, and the tap may have read none of them before the client closed.
    # The tap stops reading a connection when the client closes it, so Tansu's answers to the last acks=0
    # requests may cross the wire unread by the tap: those count as no_response (the test above bounds them
    # to the tail of their connection).
    assert did["confluent-kafka"]["sent"] == {-1: n, 0: n}
    assert by["ck-producer-acks-1", "answered"] == n
    assert by["ck-producer-acks0", "acks0_answered"] + by["ck-producer-acks0", "no_response"] == n
    assert did["kafkajs"]["sent"] == {"-1": n, "0": n}
    js = Counter(prod[prod.client_id == "kafkajs-client"].pairing)
    assert js["answered"] == n
    assert js["acks0_answered"] + js["no_response"] == n and sum(js.values()) == 2 * n, js
    # Which answers the tap read before a client closed is timing (a loaded CI machine has seen kafkajs's
    # six all unread): the flag must show on some of the two clients that keep their connection open.
    assert by["ck-producer-acks0", "acks0_answered"] + js["acks0_answered"] >= 1, (by, js)
    assert did["kafka-python"]["sent"] == {1: n, 0: n} and did["aiokafka"]["sent"] == {"all": n, 0: n}
    for client, acked in (("kpy-producer", "acks1"), ("aio-producer", "acksall")):
        assert by[f"{client}-{acked}", "answered"] == n
        assert 1 <= by[f"{client}-acks0", "acks0_answered"] + by[f"{client}-acks0", "no_response"] <= n
    assert not {p for c, p in by if c.endswith("acks0")} - {"acks0_answered", "no_response"}
    # Consumers fetched (in groups, but kafka-python's join Tansu does not finish: assigned there).
    fetch = ex[(ex.api_name == "Fetch") & ex.capture.str.startswith("tap-")]
    assert {"ck-consumer", "kpy-consumer", "aio-consumer", "kafkajs-client"} <= set(fetch.client_id)
    groups = ex[(ex.api_name == "JoinGroup") & ex.capture.str.startswith("tap-")]
    assert {"ck-consumer", "aio-consumer", "kafkajs-client"} <= set(groups.client_id)
    assert all(d["consumed"] > 0 for d in did.values()), did


def test_the_report_counts_pairings_and_flags_answers_to_acks0(exchanges):
    ex, _, agg, report, lines = exchanges
    t = agg["total"]
    counts = Counter(ex.pairing)
    for status in ("answered", "acks0_answered", "no_response", "unanswered", "orphan", "overtaken"):
        assert t[f"pairing_{status}"] == counts.get(status, 0)
        assert f"| {status} | {counts.get(status, 0)} |" in report
    assert t["orphan_responses"] == 0 and t["duplicate_files"] == 0 and t["exchanges"] == len(ex)
    assert t["pairing_acks0_answered"] >= 3 * 2  # tcpdump saw librdkafka's and kafkajs's in each capture
    assert f"The broker answered {t['pairing_acks0_answered']} Produce request(s) sent with acks=0" in report
    assert any(f"the broker answered {t['pairing_acks0_answered']} acks=0" in line for line in lines)


TOPICS = {"confluent-kafka": "real-ck", "kafka-python": "real-kpy", "aiokafka": "real-aio", "kafkajs": "real-js"}


def _offsets(rows) -> set:
    return {(r.topic, r.partition, o) for r in rows.itertuples() for o in range(r.base_offset, r.last_offset + 1)}


def test_record_counts_per_topic_are_what_the_clients_did(batches, exchanges, captured):
    """The records in the batches the clients sent and fetched, per topic, against what each client did."""
    rb = batches
    ex, _, agg, report, lines = exchanges
    _, did = captured
    n = real_traffic.N
    assert rb.error.isna().all(), rb.error.dropna().tolist()[:5]
    assert rb.crc_valid.fillna(True).all() and rb.topic.notna().all() and set(rb.kind) == {"kcap", "whole", "rot", "second"}
    data = rb[rb.record_count.notna() & ~rb.control.fillna(False)]
    produced = {k: g.groupby("topic").record_count.sum().to_dict()
                for k, g in data[data.direction == "produced"].groupby("kind")}
    assert produced["whole"] == produced["rot"] == produced["second"] == produced["kcap"]
    tap = data[data.kind == "kcap"]
    # Each client sent one message a Produce request, so its records are its Produce requests (as the tap
    # saw them: aiokafka and kafka-python may keep back up to n acks=0 messages, see the test above).
    prod = ex[(ex.api_name == "Produce") & ex.capture.str.startswith("tap-")]
    requests = prod.client_id.str.rsplit("-acks", n=1).str[0].value_counts().to_dict()
    per_topic = produced["kcap"]
    assert per_topic[TOPICS["confluent-kafka"]] == sum(did["confluent-kafka"]["sent"].values()) == 2 * n
    assert per_topic[TOPICS["kafkajs"]] == sum(did["kafkajs"]["sent"].values()) == 2 * n
    for client, prefix in (("kafka-python", "kpy-producer"), ("aiokafka", "aio-producer")):
        assert n + 1 <= per_topic[TOPICS[client]] == requests[prefix] <= sum(did[client]["sent"].values())
    assert sum(per_topic.values()) == len(prod)
    # Fetched: every offset a consumer was given crossed the wire in a Fetch response. The wire may carry
    # more: the answer to a consumer's last long poll can come after it left (aiokafka's carries what its
    # acks=0 producer sent next), and the tap records it as tcpdump does. So the offsets of every Fetch
    # response but a connection's last were consumed, and nothing was consumed that no response carried.
    fetched = tap[(tap.direction == "fetched") & ~tap.partial.fillna(False)]
    tap_ex = ex[ex.capture.str.startswith("tap-")]
    last = set(zip(tap_ex.conn, tap_ex.groupby("conn").exchange.transform("max")))
    for client, topic in TOPICS.items():
        mine = fetched[fetched.topic == topic]
        before_last = mine[[(c, e) not in last for c, e in zip(mine.conn, mine.exchange)]]
        assert len(_offsets(before_last)) <= did[client]["consumed"] <= len(_offsets(mine)), (
            client, len(_offsets(before_last)), len(_offsets(mine)), did[client])
    seen = {k: _offsets(data[(data.kind == k) & (data.direction == "fetched")]) for k in ("whole", "rot", "second")}
    assert seen["whole"] == seen["second"] and _offsets(fetched) <= seen["whole"] and _offsets(fetched) <= seen["rot"]
    # The report: per-topic totals over the four captures, and its summary lines.
    topics = {r["topic"]: r for r in agg["batches"]["by_topic"]}
    for topic, count in per_topic.items():
        assert topics[topic]["produced_records"] == 4 * count
    assert "## Record batches" in report and any(line.startswith("  record batches:") for line in lines)
