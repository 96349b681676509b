"""The broker suite's hostile batches (tests/hostile_batches.py) as conformance diffs: every case in a Produce
to Apache Kafka and to kcodec broker, the answers (codes, messages, record errors) compared, and then what
each topic holds."""

from __future__ import annotations

import re
import time
from typing import Any, Optional

from conformance import Recorder, batches, scenario
from hostile_batches import ACCEPTED, CASES, TOPICS, inflating_past, one
from scenarios_admin import create, new_topic
from scenarios_data import fetch_request, topic_id

from kcodec.messages import ProduceRequest

# Each case at the version it names, at the oldest Produce Kafka 4 takes and at the newest (topic ids)
VERSIONS = (3, 13)
GOOD = one(b"k", b"ok")  # partition 1's batch beside each hostile one: appended, or refused with the request
# kcodec broker's bound on a batch's inflated records, DEFAULT_MAX_UNCOMPRESSED, and a megabyte more
PAST_THE_BOUND = 65 << 20
_RANGE = re.compile(r"The timestamp should be within \[(-?\d+), (-?\d+)\]")
_I64 = 1 << 64


def _produce(r: Recorder, step: str, topic: str, version: int, tid: Any, *records: bytes) -> Any:
    """``records[i]`` for partition i, by name, or by topic id from v13."""
    data = ProduceRequest.TopicProduceData(partition_data=[
        ProduceRequest.PartitionProduceData(index=i, records=rec) for i, rec in enumerate(records)])
    if version >= 13:
        data.topic_id = tid
    else:
        data.name = topic
    return r.call(step, ProduceRequest(acks=-1, timeout_ms=10000, topic_data=[data]), version)


def _ready(r: Recorder, names: list[str]) -> None:
    """Until every partition takes Produce (a real Kafka's new partitions answer NOT_LEADER_OR_FOLLOWER a
    moment after Metadata names their leader; Recorder.call would send again, appending partition 1's batch
    twice): asked with a batch whose CRC is wrong, which appends nothing."""
    bad = CASES[0].records
    assert CASES[0].rule == "crc32c_mismatch"

    def taken() -> bool:
        for name in names:
            req = ProduceRequest(acks=-1, timeout_ms=10000, topic_data=[ProduceRequest.TopicProduceData(
                name=name, partition_data=[ProduceRequest.PartitionProduceData(index=i, records=bad) for i in (0, 1)])])
            if any(p.error_code != 2 for p in r.quiet(req, 9).responses[0].partition_responses):
                return False
        return True
    r.until("every partition taking Produce", taken)


def _java(v: int) -> int:
    v &= _I64 - 1
    return v - _I64 if v >= 1 << 63 else v


def _timestamp_ranges(r: Recorder, step: str, resp: Any, configs: dict[str, str], sent_ms: int) -> None:
    """The bounds a timestamp error names are the broker's now minus message.timestamp.before.max.ms and plus
    .after.max.ms (the normaliser maps them away, the broker's clock being its own): noted whether they are,
    for a now within ten seconds of sending."""
    before = int(configs.get("message.timestamp.before.max.ms", 2 ** 63 - 1))
    after = int(configs.get("message.timestamp.after.max.ms", 3_600_000))
    found = [(int(lo), int(hi)) for t in resp.responses for p in t.partition_responses
             for e in p.record_errors or [] for lo, hi in _RANGE.findall(e.batch_index_error_message or "")]
    if found:
        nows = {(_java(lo + before), _java(hi - after)) for lo, hi in found}  # each pair names one now
        r.note(f"{step}: the range is now's", all(a == b and sent_ms - 1000 <= a <= sent_ms + 10_000 for a, b in nows))


def _holds(r: Recorder, step: str, topic: str, partition: int, log_append_time: bool) -> None:
    """What the partition holds: its batches (a LogAppendTime topic's timestamps are the broker's clock)."""
    p = r.quiet(fetch_request(topic, partition=partition), 12).responses[0].partitions[0]
    held: Optional[list[Any]] = batches(p.records)
    if log_append_time and held:
        for b in held:
            b["base_timestamp"] = b["max_timestamp"] = "<broker's clock>"
            for rec in b.get("records", []):
                rec["timestamp"] = "<broker's clock>"
    r.note(step, {"error_code": p.error_code, "high_watermark": p.high_watermark, "batches": held})


@scenario()
def scenario_hostile_batches(r: Recorder) -> None:
    """Every hostile batch of the broker suite (each named by the rule it breaks) for partition 0 of a Produce,
    a good batch for partition 1, at the case's version, v3 and v13: the codes, messages and record errors;
    the batches Kafka takes that a stricter reading would not; a batch inflating past kcodec broker's bound;
    then what each partition holds."""
    names = {n: f"{r.tag}-{n}" for n in TOPICS}
    create(r, "create", [new_topic(names[n], 2, 1, c) for n, c in TOPICS.items()])
    ids = {n: topic_id(r, t) for n, t in names.items()}
    _ready(r, list(names.values()))
    for case in CASES:
        for version in sorted({case.version, *VERSIONS}):
            step = f"{case.rule} v{version}"
            sent = int(time.time() * 1000)
            resp = _produce(r, step, names[case.topic], version, ids[case.topic], case.records, GOOD)
            _timestamp_ranges(r, step, resp, TOPICS[case.topic], sent)
    for what, topic, records, version in ACCEPTED:
        _produce(r, what, names[topic], version, ids[topic], records)
    big = f"{r.tag}-big"
    create(r, "create big", [new_topic(big, 1, 1)])
    _produce(r, "inflating past kcodec's bound", big, 9, None, inflating_past(PAST_THE_BOUND))
    for n, configs in TOPICS.items():
        for partition in (0, 1):
            _holds(r, f"{n}-{partition} holds", names[n], partition,
                   configs.get("message.timestamp.type") == "LogAppendTime")
