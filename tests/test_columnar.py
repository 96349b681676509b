"""Columnar decode: the Cython engine, the Python fallback and the object decode agree, on good bytes
(real 1,000-topic payloads, generated instances of every version) and on bad ones (same DecodeError)."""

from __future__ import annotations

import mmap
import random
import uuid
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kcodec
from kcodec import DecodeError, TrailingBytesWarning, columnar
from kcodec.messages import DescribeTopicPartitionsResponse, ListTopicsResponse, MetadataResponse
from kcodec.testing import instances

ENGINES = ["python"] + (["cython"] if columnar._columnar is not None else [])
# Where the CPU has SSSE3 the cython engine copies a partition's ids with it: its SSE2 way is checked too.
VARIANTS = ENGINES + ["cython-sse2"] * (columnar._columnar is not None and columnar._columnar.ssse3_ids())
MESSAGES = [(MetadataResponse, v) for v in range(14)] + [(DescribeTopicPartitionsResponse, 0)] + \
    [(ListTopicsResponse, v) for v in (0, 1)]
IDS = [f"{c.__name__}-v{v}" for c, v in MESSAGES]


def payload(shared, v: int) -> bytes:
    return (shared / "vectors" / "metadata" / f"metadata_v{v}_1k_body.bin").read_bytes()


def assert_same_tables(a: columnar.Tables, b: columnar.Tables) -> None:
    assert a.root == b.root
    assert a.tables.keys() == b.tables.keys()
    for name, t in a.tables.items():
        u = b.tables[name]
        assert len(t) == len(u), name
        assert list(t.columns) == list(u.columns), name
        for c, x in t.columns.items():
            y = u.columns[c]
            assert type(x) is type(y), (name, c)
            if isinstance(x, np.ndarray):
                assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), (name, c)
            elif isinstance(x, columnar.Lists):
                assert x.offsets.dtype == y.offsets.dtype and np.array_equal(x.offsets, y.offsets), (name, c)
                assert x.values.dtype == y.values.dtype and np.array_equal(x.values, y.values), (name, c)
                assert (x.nulls is None) == (y.nulls is None), (name, c)
                assert x.nulls is None or np.array_equal(x.nulls, y.nulls), (name, c)
            else:
                assert x == y, (name, c)


def assert_matches_objects(t: columnar.Tables, msg) -> None:
    """The tables say what the decoded objects say, field by field (written independently of columnar)."""
    internal = "internal" if isinstance(msg, ListTopicsResponse) else "is_internal"
    topics = msg.topics
    assert t.topics["name"] == [x.name for x in topics]
    assert t.topics[internal].tolist() == [getattr(x, internal) for x in topics]
    if isinstance(msg, ListTopicsResponse):
        assert t.root == {"throttle_time_ms": msg.throttle_time_ms, "error_code": msg.error_code}
        return
    for attr in ("throttle_time_ms", "error_code", "cluster_id", "controller_id"):
        if hasattr(msg, attr):
            assert t.root[attr] == getattr(msg, attr), attr
    assert t.topics["error_code"].tolist() == [x.error_code for x in topics]
    assert [uuid.UUID(bytes=b.tobytes()) for b in t.topics["topic_id"]] == [x.topic_id for x in topics]
    assert t.topics["topic_authorized_operations"].tolist() == [x.topic_authorized_operations for x in topics]
    parts = [(i, p) for i, x in enumerate(topics) for p in x.partitions]
    offsets = np.cumsum([0] + [len(x.partitions) for x in topics])
    assert t.topics["partitions"].tolist() == offsets.tolist()
    P = t.partitions
    assert len(P) == len(parts)
    assert P["topic_index"].tolist() == [i for i, _ in parts]
    for attr in ("error_code", "partition_index", "leader_id", "leader_epoch"):
        assert P[attr].tolist() == [getattr(p, attr) for _, p in parts], attr
    lists = ["replica_nodes", "isr_nodes", "offline_replicas"]
    if isinstance(msg, DescribeTopicPartitionsResponse):
        lists += ["eligible_leader_replicas", "last_known_elr"]
        cursor = msg.next_cursor
        c = t["next_cursor"]
        assert len(c) == (cursor is not None)
        if cursor is not None:
            assert c["topic_name"] == [cursor.topic_name]
            assert c["partition_index"].tolist() == [cursor.partition_index]
    else:
        assert len(t["brokers"]) == len(msg.brokers)
        assert t["brokers"]["host"] == [b.host for b in msg.brokers]
        assert t["brokers"]["rack"] == [b.rack for b in msg.brokers]
        assert t["brokers"]["port"].tolist() == [b.port for b in msg.brokers]
    for attr in lists:
        assert P[attr].tolist() == [None if (v := getattr(p, attr)) is None else list(v) for _, p in parts], attr


def tables_on(cls, data, version, engine: str, **kw):
    """columnar.tables on an engine, or ("cython-sse2") on the cython one with its ids' copy the SSE2 way."""
    if engine != "cython-sse2":
        return columnar.tables(cls, data, version, engine=engine, **kw)
    columnar._columnar.ssse3_ids(False)
    try:
        return columnar.tables(cls, data, version, engine="cython", **kw)
    finally:
        columnar._columnar.ssse3_ids(True)


def both(cls, data, version, **kw):
    """Tables from every engine (and cython's SSE2 way) here, checked equal; the last one returned."""
    out = [tables_on(cls, data, version, e, **kw) for e in VARIANTS]
    for other in out[1:]:
        assert_same_tables(out[0], other)
    return out[-1]


@pytest.mark.parametrize("version", [1, 12])
def test_real_payloads(shared, version):
    data = payload(shared, version)
    t = both(MetadataResponse, data, version)
    assert len(t.topics) == 1000 and len(t.partitions) == 10000 and len(t["brokers"]) == 6
    assert_matches_objects(t, kcodec.decode(MetadataResponse, data, version))
    for engine in ENGINES:
        names = columnar.topic_names(MetadataResponse, data, version, engine=engine)
        assert names.names == t.topics["name"]
        assert np.array_equal(names.internal, t.topics["is_internal"])
        lt = names.to_list_topics_response()
        assert [x.name for x in lt.topics] == names.names and lt.error_code == t.root["error_code"]


@pytest.mark.parametrize("cls,version", MESSAGES, ids=IDS)
@given(data=st.data())
def test_generated_instances(cls, version, data):
    msg = data.draw(instances(cls, version))
    body = kcodec.encode(msg, version)
    t = both(cls, body, version)
    assert_matches_objects(t, kcodec.decode(cls, body, version))
    for engine in ENGINES:
        n = columnar.topic_names(cls, body, version, engine=engine)
        assert n.names == t.topics["name"]


def errors_match(cls, data, version) -> str:
    """Every engine fails like the object decode, or all succeed with the same tables."""
    try:
        msg = kcodec.decode(cls, data, version)
    except DecodeError as e:
        want = (e.reason, e.offset, e.path, e.message, e.version)
        scans = [(e, "tables", tables_on) for e in VARIANTS] + [
            (e, "names", lambda c, d, v, e: columnar.topic_names(c, d, v, engine=e)) for e in ENGINES]
        for engine, name, scan in scans:
            with pytest.raises(DecodeError) as got:
                scan(cls, data, version, engine)
            g = got.value
            assert (g.reason, g.offset, g.path, g.message, g.version) == want, (engine, name)
        return "error"
    assert_matches_objects(both(cls, data, version), msg)
    internal = "internal" if cls is ListTopicsResponse else "is_internal"
    for engine in ENGINES:  # the names-only scan steps over the partitions: it must land on each topic
        names = columnar.topic_names(cls, data, version, engine=engine)
        assert names.names == [t.name for t in msg.topics], engine
        assert names.internal.tolist() == [bool(getattr(t, internal, False)) for t in msg.topics], engine
    return "ok"


def every_cut_and_mutation(cls, body, version) -> set[str]:
    """errors_match of every truncation of body and five mutations of each byte: {"ok", "error"} seen."""
    seen = set()
    for pos in range(len(body)):
        seen.add(errors_match(cls, body[:pos], version))
        for value in (0x00, 0x01, 0x80, 0xFF, body[pos] ^ 1):
            seen.add(errors_match(cls, body[:pos] + bytes([value]) + body[pos + 1:], version))
    return seen


@pytest.mark.parametrize("version", [1, 12])
def test_truncations_and_mutations_of_real_payloads(shared, version):
    data = payload(shared, version)
    rng = random.Random(version)
    cuts = list(range(0, 120)) + rng.sample(range(120, len(data)), 12)
    for cut in cuts:
        assert errors_match(MetadataResponse, data[:cut], version) == "error"
    seen = set()
    for _ in range(30):
        b = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(len(b))
            b[pos] = rng.choice([0, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        seen.add(errors_match(MetadataResponse, bytes(b), version))
    assert seen == {"ok", "error"}


@pytest.mark.parametrize("cls,version", MESSAGES, ids=IDS)
@given(data=st.data())
def test_mutated_instances_fail_alike(cls, version, data):
    body = bytearray(kcodec.encode(data.draw(instances(cls, version)), version))
    cut = data.draw(st.integers(0, len(body)))
    errors_match(cls, bytes(body[:cut]), version)
    if body:
        for _ in range(data.draw(st.integers(1, 3))):
            body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
        errors_match(cls, bytes(body), version)


def test_hostile_lengths_fail_before_allocating():
    # A topics array claiming 2**31-1 elements in a 9-byte buffer: the length check, not an allocation.
    body = (0).to_bytes(4, "big") + (2).to_bytes(4, "big") + b"\x7f\xff\xff\xff"  # brokers, controller
    for engine in ENGINES:
        with pytest.raises(DecodeError) as e:
            columnar.tables(MetadataResponse, body, 1, engine=engine)
        assert e.value.path == "topics" and "needs at least" in e.value.reason
    errors_match(MetadataResponse, body, 1)
    errors_match(MetadataResponse, b"\x00" * 4 + b"\x01" + b"\xff" * 5, 12)  # over-long varint
    bad_utf8 = kcodec.encode(MetadataResponse(topics=[MetadataResponse.Topic(name="ab")]), 12)
    errors_match(MetadataResponse, bad_utf8.replace(b"ab", b"\xc3\x28"), 12)


@pytest.mark.parametrize("engine", ENGINES)
def test_any_buffer_and_trailing_bytes(shared, engine):
    data = payload(shared, 12)
    want = columnar.tables(MetadataResponse, data, 12, engine=engine)
    arr = np.frombuffer(data, dtype=np.uint8)
    with mmap.mmap(-1, len(data)) as m:
        m.write(data)
        for buf in (bytearray(data), memoryview(data), arr, m, arr[::1]):
            assert_same_tables(columnar.tables(MetadataResponse, buf, 12, engine=engine), want)
    wide = np.zeros(2 * len(data), dtype=np.uint8)  # a non-contiguous view is copied, by either engine
    wide[::2] = np.frombuffer(data, dtype=np.uint8)
    strided = wide[::2]
    assert not strided.flags.c_contiguous
    assert_same_tables(columnar.tables(MetadataResponse, strided, 12, engine=engine), want)
    assert_same_tables(columnar.tables(MetadataResponse, memoryview(wide)[::2], 12, engine=engine), want)
    with pytest.raises(DecodeError) as e:
        columnar.tables(MetadataResponse, data + b"\x00", 12, engine=engine)
    assert e.value.offset == len(data) and "trailing" in e.value.reason
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = columnar.tables(MetadataResponse, data + b"\x00", 12, strict=False, engine=engine)
    assert [x.category for x in w] == [TrailingBytesWarning]
    assert_same_tables(t, want)


def test_public_helpers_and_wrong_classes(shared):
    data = payload(shared, 12)
    t = columnar.metadata_tables(data, 12)
    assert columnar.metadata_topic_names(data, 12).names == t.topics["name"]
    p = t.partitions
    first = t.topics["partitions"][0], t.topics["partitions"][1]
    assert (p["topic_index"][first[0]:first[1]] == 0).all()
    assert p["isr_nodes"][0].dtype == np.int32 and p["replica_nodes"].offsets.dtype == np.int32
    lt = ListTopicsResponse(topics=[ListTopicsResponse.Topic(name="a", internal=True)])
    assert columnar.list_topics_topic_names(kcodec.encode(lt, 1), 1).names == ["a"]
    assert len(columnar.list_topics_tables(kcodec.encode(lt, 0), 0).topics) == 1
    dtp = DescribeTopicPartitionsResponse(topics=[DescribeTopicPartitionsResponse.Topic(name="x")])
    assert columnar.describe_topic_partitions_tables(kcodec.encode(dtp, 0)).topics["name"] == ["x"]
    assert columnar.describe_topic_partitions_topic_names(kcodec.encode(dtp, 0)).names == ["x"]
    with pytest.raises(TypeError):
        columnar.tables(kcodec.messages.MetadataRequest, b"", 1)
    with pytest.raises(kcodec.UnsupportedVersionError):
        columnar.metadata_tables(data, 14)


def test_engine_follows_the_backend_choice():
    from test_api import expected_engine

    assert columnar.ENGINE == expected_engine("columnar._columnar")


def _partition_rows(cls, version: int):
    """A response whose partitions take every turn of the fast row loops: empty, one-value and long arrays
    (a multi-byte compact length), tagged fields and, where nullable, null arrays, in first, middle and
    last rows of several topics; a topic whose arrays mostly repeat the row before's length (the loops'
    guess), with a few that do not; and one whose rows take turns between two shapes."""
    Topic, Partition = cls.Topic, cls.Partition
    nullable = [f for f in ("eligible_leader_replicas", "last_known_elr") if hasattr(Partition(), f)]
    topics = []
    for t in range(3):
        parts = []
        for i in range(4):
            p = Partition(partition_index=i, leader_id=t * 10 + i, leader_epoch=-i, error_code=i % 2,
                          replica_nodes=list(range(i + 1)), isr_nodes=[] if i == 1 else [i],
                          offline_replicas=list(range(130)) if (t, i) == (1, 2) else [])
            for f in nullable:
                setattr(p, f, None if (t + i) % 3 == 0 else [t, i])
            if version >= 9 and (t, i) in ((0, 0), (1, 3), (2, 1)):
                p.unknown_tagged_fields = {7: b"xy"}
            parts.append(p)
        topics.append(Topic(name=f"topic-{t}", partitions=parts))
    parts = []
    for i in range(6):
        # arrays of 5 and 7 ids after arrays of 3 and 4: the partition way gives its row back to the general one
        p = Partition(partition_index=i, leader_id=i, replica_nodes=[1, 2, 3, 4] if i == 5 else [1, 2, 3],
                      isr_nodes=[1, 2] if i == 3 else list(range(7)) if i == 5 else [1, 2, 3],
                      offline_replicas=[4, 5, 6, 7, 8] if i == 1 else [])
        for f in nullable:
            setattr(p, f, [] if i != 4 else [i])
        parts.append(p)
    topics.append(Topic(name="repeats", partitions=parts))
    # two shapes taking turns (an ISR one short), then a third: the names scan's two guesses change places
    topics.append(Topic(name="turns", partitions=[
        Partition(partition_index=i, replica_nodes=[1, 2, 3], isr_nodes=[1, 2, 3] if i % 2 == 0 else [1, 2] if i < 5
                  else [1]) for i in range(7)]))
    return cls(topics=topics)


@pytest.mark.parametrize("cls,version", [(MetadataResponse, 1), (MetadataResponse, 12),
                                         (DescribeTopicPartitionsResponse, 0)], ids=["md-v1", "md-v12", "dtp-v0"])
def test_partition_rows_fast_loop_fails_alike(cls, version):
    """The row loops of plain structs (partitions) hand anything unusual to the full path: the same tables
    on good bytes, the same DecodeError at every truncation and at mutations of every byte."""
    body = kcodec.encode(_partition_rows(cls, version), version)
    assert errors_match(cls, body, version) == "ok"
    seen = set()
    for pos in range(len(body)):
        errors_match(cls, body[:pos], version)
        for value in (0x00, 0x80, 0xFF, body[pos] ^ 1):
            seen.add(errors_match(cls, body[:pos] + bytes([value]) + body[pos + 1:], version))
    assert seen == {"ok", "error"}


def test_partition_rows_counted_across_topics():
    """take_rows counts a batch's rows in the columns' lengths only when flushed (a row for the full way,
    room set up again, the walk's end): topics with and without null ELR lists, plain and tagged rows, in
    every order, give the object decode's tables and null masks."""
    P = DescribeTopicPartitionsResponse.Partition
    topics = []
    for t in range(12):
        parts = [P(partition_index=i, replica_nodes=[1, 2, 3], isr_nodes=[1, 2, 3][: 1 + (t + i) % 3],
                   eligible_leader_replicas=None if (t % 4 == 1 and i == t % 3) else [i],
                   last_known_elr=None if t % 5 == 2 else [])
                 for i in range(t % 4 + 1)]
        if t % 6 == 3:
            parts[-1].unknown_tagged_fields = {3: b"z"}
        topics.append(DescribeTopicPartitionsResponse.Topic(name=f"t{t}", partitions=parts))
    body = kcodec.encode(DescribeTopicPartitionsResponse(topics=topics), 0)
    assert errors_match(DescribeTopicPartitionsResponse, body, 0) == "ok"
    t = columnar.tables(DescribeTopicPartitionsResponse, body, 0)
    elr = t.partitions["eligible_leader_replicas"]
    want = [p.eligible_leader_replicas is None for topic in topics for p in topic.partitions]
    assert [bool(x) for x in elr.nulls] == want and any(want) and not all(want)


@pytest.mark.parametrize("cls,version", [(MetadataResponse, 12), (DescribeTopicPartitionsResponse, 0)],
                         ids=["md-v12", "dtp-v0"])
def test_partition_run_room_checked_per_call(cls, version):
    """partition_run checks once a call whether each array has room for all the call's rows: an array empty
    until a late row (no memory yet), and a layout that learned its first allocations from a body with few
    ids, then decodes bodies with more (room for only some rows), give the object decode's tables."""
    P, T = cls.Partition, cls.Topic

    def body(every: int) -> bytes:
        topics = [T(name=f"t{t}", partitions=[
            P(partition_index=i, replica_nodes=[1, 2, 3][: 1 + i % 3], isr_nodes=[1] if every else [],
              offline_replicas=[t, i, 7, 9][: 1 + i % 4] if every and (t * 50 + i) % every == 0 else [])
            for i in range(50)]) for t in range(40)]
        return kcodec.encode(cls(topics=topics), version)
    for every in (0, 997, 3, 1, 0, 1):
        assert errors_match(cls, body(every), version) == "ok"


@pytest.mark.skipif(columnar._columnar is None, reason="the Cython engine is not built")
def test_kept_blocks_reused_alike(shared):
    """Large blocks of dropped columns are kept (bounded) for the next decode, which gives the same
    tables; tracemalloc sees the columns in use, not the kept blocks."""
    import tracemalloc

    md = kcodec.decode(MetadataResponse, payload(shared, 12), 12)
    body = kcodec.encode(MetadataResponse(brokers=md.brokers, topics=md.topics * 4), 12)
    want = columnar.tables(MetadataResponse, body, 12, engine="python")
    for _ in range(3):
        assert_same_tables(columnar.tables(MetadataResponse, body, 12, engine="cython"), want)
    blocks, kept = columnar.kept_memory()
    assert 0 < blocks <= 64 and 0 < kept <= 16 << 20
    tracemalloc.start()
    try:
        t = columnar.tables(MetadataResponse, body, 12, engine="cython")
        assert columnar.kept_memory()[1] < kept  # the blocks were taken again
        in_use, peak = tracemalloc.get_traced_memory()
        assert in_use >= t.partitions["replica_nodes"].values.nbytes + t.partitions["leader_id"].nbytes
        assert peak <= 1.25 * in_use  # kept blocks are not much larger than what they serve
        del t
        assert tracemalloc.get_traced_memory()[0] < in_use
    finally:
        tracemalloc.stop()
    kept_now = columnar.kept_memory()[1]  # the dropped tables' blocks are kept again
    assert kept_now > 0 and columnar.release_memory() == kept_now
    assert columnar.kept_memory() == (0, 0) and columnar.release_memory() == 0


@pytest.mark.skipif(columnar._columnar is None, reason="the Cython engine is not built")
def test_arrays_through_numpy_c_api_and_frombuffer_alike(shared):
    """The extension makes its arrays through numpy's C API once its table passes the check, else through
    numpy.frombuffer (a table that fails the check, or another ndarray type at its place); both give the
    fallback engine's tables, and the arrays keep their memory alive after everything else is dropped."""
    capsule = columnar._numpy_capsule()
    assert columnar._numpy_api()  # what the other tests here ran
    data = payload(shared, 12)
    dtp = kcodec.encode(DescribeTopicPartitionsResponse(topics=[DescribeTopicPartitionsResponse.Topic(
        name="x", partitions=[DescribeTopicPartitionsResponse.Partition(replica_nodes=[1], eligible_leader_replicas=None,
                                                                        last_known_elr=[2])])]), 0)
    want = [columnar.tables(MetadataResponse, data, 12, engine="python"),
            columnar.tables(DescribeTopicPartitionsResponse, dtp, 0, engine="python")]
    use = columnar._columnar.use_numpy_api
    try:
        for ok in (True, False):
            if not ok:
                assert not use(capsule, np.ndarray, lambda make: False)
                assert not use(capsule, np.generic, columnar._arrays_made_right)
                assert not use(None, np.ndarray, columnar._arrays_made_right)
                with pytest.raises(ZeroDivisionError):
                    use(capsule, np.ndarray, lambda make: 1 / 0)
            got = [columnar.tables(MetadataResponse, data, 12, engine="cython"),
                   columnar.tables(DescribeTopicPartitionsResponse, dtp, 0, engine="cython")]
            for a, b in zip(got, want):
                assert_same_tables(a, b)
            ids = got[0].topics["topic_id"]
            del got
            assert ids.shape == (1000, 16) and ids.tolist() == want[0].topics["topic_id"].tolist()
    finally:
        assert use(capsule, np.ndarray, columnar._arrays_made_right)


@pytest.mark.parametrize("engine", ENGINES)
def test_names_ascii_or_not_at_every_length_and_place(engine: str) -> None:
    """A name is taken as ASCII only when every byte is: checked a word at a time, its last bytes as one word
    ending at its end, so a non-ASCII character in the last word (or in a name shorter than a word) must
    still send it the decoder's way, in both scans."""
    names = ["x" * n for n in range(41)] + ["a" * k + "é" + "b" * (n - k - 1) for n in range(1, 41) for k in range(n)]
    T = MetadataResponse.Topic
    for v in (1, 12):
        data = kcodec.encode(MetadataResponse(topics=[T(name=n) for n in names]), v)
        assert list(columnar.topic_names(MetadataResponse, data, v, engine=engine).names) == names
        assert list(columnar.tables(MetadataResponse, data, v, engine=engine).topics["name"]) == names


@pytest.mark.skipif(columnar._columnar is None, reason="the cython engine is not built")
def test_ssse3_ids_switch():
    """ssse3_ids turns SSSE3's copy of the ids off and back on (never on where the CPU lacks it)."""
    cpu = columnar._columnar.ssse3_ids()
    try:
        assert columnar._columnar.ssse3_ids(False) is False and columnar._columnar.ssse3_ids() is False
    finally:
        assert columnar._columnar.ssse3_ids(True) is cpu
    assert columnar._columnar.ssse3_ids() is cpu
