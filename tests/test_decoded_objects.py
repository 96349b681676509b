"""What a decoded message is made of (docs/decoded-objects.md), on both backends: scalar arrays are
tuples (the empty one shared, untracked by the cyclic GC), struct arrays lists; equality, encoding,
pickling and to_dict treat a tuple and a list of the same items alike."""

from __future__ import annotations

import gc
import pickle
import uuid

import pytest

import kcodec
from kcodec.core.backend import available
from kcodec.core.ir import program_for
from kcodec.messages import DescribeConfigsRequest, MetadataRequest, MetadataResponse

from needs import missing

BACKENDS = sorted(available().items())
IDS = [n for n, _ in BACKENDS]
MR = MetadataResponse


def _built(topic_id: int = 7) -> MetadataResponse:
    return MR(brokers=[MR.Broker(node_id=1, host="a", port=9092)], topics=[MR.Topic(
        name="orders", topic_id=uuid.UUID(int=topic_id), partitions=[
            MR.Partition(partition_index=0, replica_nodes=[1, 2, 300], isr_nodes=[1], offline_replicas=[]),
            MR.Partition(partition_index=1, replica_nodes=[], isr_nodes=[2])])])


@pytest.mark.parametrize("name,backend", BACKENDS, ids=IDS)
@pytest.mark.parametrize("version", [1, 12])
def test_scalar_arrays_are_tuples_struct_arrays_lists(name, backend, version):
    built = _built(7 if version >= 10 else 0)  # (topic ids arrived in v10)
    prog = program_for(MR, version)
    msg, _ = backend.decode(prog, backend.encode(prog, built), 0, None, False)
    assert msg == built and built == msg
    assert type(msg.topics) is list and type(msg.topics[0].partitions) is list
    p0, p1 = msg.topics[0].partitions
    assert p0.replica_nodes == (1, 2, 300) and p0.isr_nodes == (1,)
    assert p1.replica_nodes is () and p0.offline_replicas is ()  # noqa: F632 (the shared empty tuple)
    for t in (p0.replica_nodes, p0.isr_nodes):
        assert type(t) is tuple
        if name == "cython":
            assert not gc.is_tracked(t)
    assert msg != _built().__class__(topics=[])


@pytest.mark.parametrize("name,backend", BACKENDS, ids=IDS)
def test_absent_scalar_array_is_the_empty_tuple(name, backend):
    prog = program_for(MR, 1)  # offline_replicas arrived in v5
    msg, _ = backend.decode(prog, backend.encode(prog, _built(0)), 0, None, False)
    assert all(p.offline_replicas == () for p in msg.topics[0].partitions)


@pytest.mark.parametrize("name,backend", BACKENDS, ids=IDS)
def test_string_arrays_and_zero_uuids(name, backend):
    keys = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=2, resource_name="t", configuration_keys=["a", "é"])])
    prog = program_for(DescribeConfigsRequest, 4)
    back, _ = backend.decode(prog, backend.encode(prog, keys), 0, None, False)
    assert back.resources[0].configuration_keys == ("a", "é") and back == keys
    prog = program_for(MetadataRequest, 12)
    req = MetadataRequest(topics=[MetadataRequest.Topic(name="a"), MetadataRequest.Topic(name="b")])
    back, _ = backend.decode(prog, backend.encode(prog, req), 0, None, False)
    assert back == req and back.topics[0].topic_id == uuid.UUID(int=0)


def test_decoded_messages_encode_pickle_and_convert_alike():
    built = _built()
    msg = kcodec.decode(MR, kcodec.encode(built, 12), 12)
    assert kcodec.encode(msg, 12) == kcodec.encode(built, 12)
    assert kcodec.encoded_size(msg, 12) == len(kcodec.encode(built, 12))
    copy = pickle.loads(pickle.dumps(msg))
    assert copy == msg and copy.topics[0].partitions[0].replica_nodes == (1, 2, 300)
    assert kcodec.to_dict(msg) == kcodec.to_dict(built)
    assert kcodec.to_dict(msg)["topics"][0]["partitions"][0]["replica_nodes"] == [1, 2, 300]
    assert kcodec.from_dict(MR, kcodec.to_dict(msg)) == msg


def test_equality_still_sees_different_items():
    a = MR.Partition(replica_nodes=[1, 2])
    assert a == MR.Partition(replica_nodes=(1, 2))
    assert a != MR.Partition(replica_nodes=(1, 3))
    assert a != MR.Partition(replica_nodes=(1, 2, 3))
    assert MR.Partition(replica_nodes=[]) != MR.Partition(replica_nodes=(1,))


def test_equal_int32_arrays_share_a_tuple_and_never_mix():
    """The compiled backend hands out one tuple for equal short int32 arrays (a cache keyed by their wire
    bytes); arrays that differ, by value, length or sign, and arrays past the cache's reach stay apart."""
    backend = dict(BACKENDS).get("cython")
    if backend is None:
        missing("the Cython backend (kcodec.core._fast, built by pip install with a compiler)")
    sets = [[1, 2, 3], [1, 2], [3, 2, 1], [1, 2, 3, 4, 5, 6, 7, 8], [-1, 70000, 2**31 - 1], [-2**31], [0] * 9]
    many = [[i, i + 1] for i in range(3000)]  # more distinct arrays than entries: misses replace entries
    arrays = sets * 2 + many * 2
    built = MR(topics=[MR.Topic(name="t", partitions=[
        MR.Partition(partition_index=i, replica_nodes=r, isr_nodes=r[:1]) for i, r in enumerate(arrays)])])
    prog = program_for(MR, 12)
    msg, _ = backend.decode(prog, backend.encode(prog, built), 0, None, False)
    parts = msg.topics[0].partitions
    assert [list(p.replica_nodes) for p in parts] == arrays and msg == built
    n = len(sets)
    assert parts[0].replica_nodes is parts[n].replica_nodes  # equal and short: one object
    assert parts[0].isr_nodes is parts[1].isr_nodes          # (1,) twice
    assert parts[6].replica_nodes is not parts[n + 6].replica_nodes  # nine ints: each array its own
    assert all(type(p.replica_nodes) is tuple for p in parts)



def test_shared_int32_arrays_are_told_apart_by_every_word():
    """Arrays of 1 to 8 ints that differ in one place only, many more than the cache's entries (so they meet
    in its entries): each comes out with its own values, whichever word differs (the compare reads 8 bytes
    at a time, the last 8 ending at the array's end)."""
    backend = dict(BACKENDS).get("cython")
    if backend is None:
        missing("the Cython backend (kcodec.core._fast, built by pip install with a compiler)")
    arrays = [[7] * k + [v] + [7] * (n - k - 1) for n in range(1, 9) for k in range(n) for v in range(150)]
    built = MR(topics=[MR.Topic(name="t", partitions=[
        MR.Partition(partition_index=i, replica_nodes=r) for i, r in enumerate(arrays * 2)])])
    prog = program_for(MR, 12)
    msg, _ = backend.decode(prog, backend.encode(prog, built), 0, None, False)
    assert [list(p.replica_nodes) for p in msg.topics[0].partitions] == arrays * 2


def test_a_structs_equal_int32_arrays_are_one_tuple_and_never_mix():
    """Within a partition, an int32 array with the bytes of the one before it (an ISR that is the replica
    set) is that tuple, also past the cache's 8 ints; one that differs in any one word, or in its length,
    keeps its own values; the pure reference decodes the same values."""
    backends = dict(BACKENDS)
    sets = [[9] * n for n in (1, 3, 8, 9, 12)] + [list(range(100, 100 + n)) for n in (2, 9, 16)]
    parts, want = [], []
    for r in sets:
        parts.append(MR.Partition(replica_nodes=r, isr_nodes=list(r), offline_replicas=list(r)))
        for k in range(len(r)):  # one word different, each place: never the replicas' tuple
            parts.append(MR.Partition(replica_nodes=r, isr_nodes=r[:k] + [r[k] + 1] + r[k + 1:]))
        parts.append(MR.Partition(replica_nodes=r, isr_nodes=r[:-1], offline_replicas=r + [0]))
    for i, p in enumerate(parts):
        p.partition_index = i
        want.append((list(p.replica_nodes), list(p.isr_nodes), list(p.offline_replicas)))
    built = MR(topics=[MR.Topic(name="t", partitions=parts)])
    prog = program_for(MR, 12)
    for name, backend in backends.items():
        msg, _ = backend.decode(prog, backend.encode(prog, built), 0, None, False)
        got = msg.topics[0].partitions
        assert [(list(p.replica_nodes), list(p.isr_nodes), list(p.offline_replicas)) for p in got] == want
        assert msg == built
        if name == "cython":
            same = [p for p in got if p.isr_nodes == p.replica_nodes]
            assert len(same) == len(sets) and all(
                p.isr_nodes is p.replica_nodes and p.offline_replicas is p.replica_nodes for p in same)
            assert not any(gc.is_tracked(p.isr_nodes) for p in got)


def test_one_int_for_every_topics_int32_min(shared):
    """On the 1,000-topic payload each topic's INT32_MIN authorized operations is one shared int, also
    across two decodes."""
    if dict(BACKENDS).get("cython") is None:
        missing("the Cython backend (kcodec.core._fast, built by pip install with a compiler)")
    backend = dict(BACKENDS)["cython"]
    data = (shared / "vectors" / "metadata" / "metadata_v12_1k_body.bin").read_bytes()
    prog = program_for(MR, 12)
    decoded = [backend.decode(prog, data, 0, None, False)[0] for _ in range(2)]
    ops = [t.topic_authorized_operations for m in decoded for t in m.topics]
    assert set(ops) == {-2**31} and len({id(v) for v in ops}) == 1


@pytest.mark.parametrize("name,backend", BACKENDS, ids=IDS)
def test_int_fields_past_the_small_ints_keep_their_values(name, backend):
    """Shared ints (the compiled backend's cache by value) never mix values: many distinct ones (more than
    the cache holds, so misses replace entries) and repeated ones, of both signs, int32 and int16."""
    epochs = [70000 + i for i in range(600)] + [-2**31, 2**31 - 1, 257, -6, 300] * 3
    built = MR(topics=[MR.Topic(name="t", error_code=-300, partitions=[
        MR.Partition(partition_index=i, leader_epoch=e, leader_id=-(e // 2), error_code=i % 700 - 350)
        for i, e in enumerate(epochs)])])
    prog = program_for(MR, 12)
    msg, _ = backend.decode(prog, backend.encode(prog, built), 0, None, False)
    assert msg == built
    parts = msg.topics[0].partitions
    assert [p.leader_epoch for p in parts] == epochs and [p.leader_id for p in parts] == [-(e // 2) for e in epochs]


@pytest.mark.parametrize("name,backend", BACKENDS, ids=IDS)
def test_int16_length_names_ascii_or_not(name, backend):
    """Names with an int16 length (Metadata v0-v8; the compiled backend copies ASCII ones straight into
    their slot): ASCII, empty, non-ASCII and long names decode alike; a bad byte or a cut name fails on
    the UTF-8 path with its offset and field path, after an ASCII name as before it."""
    names = ["orders", "", "é" * 3 + "x", "x" * 300, "a-b_c.d" * 7]
    built = MR(topics=[MR.Topic(name=n, partitions=[MR.Partition(replica_nodes=[1])]) for n in names])
    prog = program_for(MR, 1)
    data = backend.encode(prog, built)
    msg, end = backend.decode(prog, data, 0, None, False)
    assert msg == built and end == len(data) and [t.name for t in msg.topics] == names
    at = data.index(b"a-b_c.d")
    bad = bytearray(data)
    bad[at + 3] = 0xFF
    with pytest.raises(kcodec.DecodeError) as ei:
        backend.decode(prog, bytes(bad), 0, None, False)
    assert ei.value.reason.startswith("invalid UTF-8") and ei.value.offset == at + 3
    assert ei.value.path == "topics[4].name"
    with pytest.raises(kcodec.DecodeError) as ei:
        backend.decode(prog, data[:at + 5], 0, None, False)
    assert ei.value.offset == at and ei.value.path == "topics[4].name"
    assert ei.value.reason == f"expected a string of {len(names[4])} bytes, 5 left"


_NO_COLLECTION = """
import gc, sys, kcodec
from kcodec.messages import MetadataResponse as MR
assert kcodec.BACKEND == "cython", kcodec.BACKEND
data = open(sys.argv[1], "rb").read()
started = []
kcodec.decode(MR, data, 12)  # (the first decode of a version loads its definitions)
pairs = [(i, -i) for i in range(5000)]  # kept: takes every free 2-tuple
gc.collect()
gc.callbacks.append(lambda phase, info: phase == "start" and started.append(info["generation"]))
counts = []
for _ in range(3):
    gc.collect(0)  # (what the last decode left young, shared tuples and ints, is not its result's cost)
    started.clear()
    msg = kcodec.decode(MR, data, 12)
    counts.append(len(started))  # (read before anything else allocates)
    del msg
print(counts)
"""


def test_a_decode_does_not_collect_what_it_built(shared):
    """The compiled decode runs with the cyclic GC paused and builds its return value before resuming
    it, so no collection starts inside the call to scan the fresh (acyclic) result: a caller that drops
    it before its next allocation owes none. The 2-tuple free list is emptied first, so that building
    the return value would have to allocate. In a child process without a tracer: coverage's allocates
    after every line, which would start the collection itself."""
    import os
    import subprocess
    import sys

    if dict(BACKENDS).get("cython") is None:
        missing("the Cython backend (kcodec.core._fast, built by pip install with a compiler)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COV_CORE", "COVERAGE", "KCODEC_PURE"))}
    data = shared / "vectors" / "metadata" / "metadata_v12_1k_body.bin"
    child = subprocess.run([sys.executable, "-c", _NO_COLLECTION, str(data)], env=env, capture_output=True,
                           text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "[0, 0, 0]"
