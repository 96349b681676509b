"""Metadata responses of 1,000, 10,000 and 100,000 topics: decode to objects, columnar decode, names-only
scan, encode and encoded_size, for every kcodec backend built here, beside kio 0.6.5 and kafka-python
3.0.12 (each skipped when not installed). Every timed call is checked once against the expected result.

Names: ``<operation>[<size> v<version>-<implementation>]``; the group is ``<operation> <size> v<version>``.
Rounds follow the cost of one call (a few seconds per case at most); the report uses each case's min.
"""

from __future__ import annotations

import gc
import io
import time
import tracemalloc

import pytest

import kcodec
from kcodec import columnar
from kcodec._backend import available
from kcodec.ir import program_for
from kcodec.messages import MetadataResponse

try:
    import kio.index
    import kio.serial
except ImportError:
    kio = None
try:
    import kafka.protocol.metadata as kp_metadata
except ImportError:
    kp_metadata = None

BACKENDS = sorted(available().items())
ENGINES = ["cython"] if columnar._columnar is not None else []
CASES = [("1k", 1), ("1k", 12), ("10k", 12), ("100k", 12)]
SLOW = {"kcodec-python", "kio", "kafka-python", "columnar-python"}  # object-per-partition: not at 100k


def run(benchmark, fn, *args):
    """Time fn(*args) with rounds that fit about two seconds (3 to 200), after one warm-up call."""
    t = time.perf_counter()
    result = fn(*args)
    one = max(time.perf_counter() - t, 1e-6)
    rounds = int(max(3, min(200, 2.0 / one)))
    benchmark.pedantic(fn, args=args, rounds=rounds, iterations=1, warmup_rounds=1 if one < 0.1 else 0)
    return result


def implementations(operation):
    """(name, make) pairs: make(version, data, msg) returns the function to time and its arguments."""
    out = []
    for name, backend in BACKENDS:
        def obj_decode(v, data, msg, b=backend):
            return b.decode, (program_for(MetadataResponse, v), data)

        def obj_encode(v, data, msg, b=backend):
            return b.encode, (program_for(MetadataResponse, v), msg)

        def obj_size(v, data, msg, b=backend):
            return b.encoded_size, (program_for(MetadataResponse, v), msg)
        out.append((f"kcodec-{name}", {"decode": obj_decode, "encode": obj_encode, "encoded_size": obj_size}))
    for engine in ["python"] + ENGINES:
        def tables(v, data, msg, e=engine):
            return (lambda d: columnar.tables(MetadataResponse, d, v, engine=e)), (data,)

        def names(v, data, msg, e=engine):
            return (lambda d: columnar.topic_names(MetadataResponse, d, v, engine=e)), (data,)
        out.append((f"columnar-{engine}", {"columnar": tables, "names": names}))
    if kio is not None:
        def kio_decode(v, data, msg):
            read = kio.serial.entity_reader(kio.index.load_response_schema(3, v))
            return (lambda d: read(d, 0)[0]), (data,)

        def kio_encode(v, data, msg):
            schema = kio.index.load_response_schema(3, v)
            entity = kio.serial.entity_reader(schema)(data, 0)[0]
            write = kio.serial.entity_writer(schema)

            def encode(e):
                buf = io.BytesIO()
                write(buf, e)
                return buf.getvalue()
            return encode, (entity,)
        out.append(("kio", {"decode": kio_decode, "encode": kio_encode}))
    if kp_metadata is not None:
        def kp_decode(v, data, msg):
            return (lambda d: kp_metadata.MetadataResponse.decode(d, version=v)), (data,)

        def kp_encode(v, data, msg):
            obj = kp_metadata.MetadataResponse.decode(data, version=v)
            return (lambda o: bytes(o.encode())), (obj,)
        out.append(("kafka-python", {"decode": kp_decode, "encode": kp_encode}))
    return [(name, ops[operation]) for name, ops in out if operation in ops]


def cases(operation):
    return [pytest.param(size, v, name, make, id=f"{size} v{v}-{name}")
            for size, v in CASES for name, make in implementations(operation)
            if not (size == "100k" and name in SLOW)]


_decoded: dict[tuple[str, int], object] = {}


def decoded(metadata_payloads, size, v):
    if (size, v) not in _decoded:
        _decoded.clear()  # one large message at a time
        _decoded[(size, v)] = kcodec.decode(MetadataResponse, metadata_payloads[(size, v)], v)
    return _decoded[(size, v)]


def check(operation, name, result, data, msg):
    """What one call returned is right (so the figures time real work)."""
    if operation == "decode" and name.startswith("kcodec"):
        assert result == (msg, len(data))
    elif operation == "decode":
        assert len(result.topics) == len(msg.topics)
    elif operation == "encode":
        assert result == data
    elif operation == "encoded_size":
        assert result == len(data)
    elif operation == "columnar":
        assert result.topics["name"] == [t.name for t in msg.topics]
        assert len(result.partitions) == sum(len(t.partitions) for t in msg.topics)
    else:
        assert result.names == [t.name for t in msg.topics]


def bench(benchmark, metadata_payloads, operation, size, v, make, name):
    if (size, v) not in metadata_payloads:
        pytest.skip(f"{size} payload not made (KCODEC_BENCH_SIZES)")
    benchmark.group = f"{operation} {size} v{v}"
    benchmark.extra_info.update(operation=operation, size=size, version=v, implementation=name,
                                payload_bytes=len(metadata_payloads[(size, v)]))
    data = metadata_payloads[(size, v)]
    # At 100k only the fast implementations run; the objects to check against come from the default
    # backend, which is only quick enough when it is the compiled one.
    msg = decoded(metadata_payloads, size, v) if size != "100k" or kcodec.BACKEND == "cython" else None
    fn, args = make(v, data, msg)
    result = run(benchmark, fn, *args)
    if msg is not None:
        check(operation, name, result, data, msg)
    else:
        assert len(result.names if operation == "names" else result.topics["name"]) == 100_000


@pytest.mark.parametrize("size,v,name,make", cases("decode"))
def test_decode(benchmark, metadata_payloads, size, v, name, make):
    bench(benchmark, metadata_payloads, "decode", size, v, make, name)


@pytest.mark.parametrize("size,v,name,make", cases("columnar"))
def test_columnar(benchmark, metadata_payloads, size, v, name, make):
    bench(benchmark, metadata_payloads, "columnar", size, v, make, name)


@pytest.mark.parametrize("size,v,name,make", cases("names"))
def test_names(benchmark, metadata_payloads, size, v, name, make):
    bench(benchmark, metadata_payloads, "names", size, v, make, name)


@pytest.mark.parametrize("size,v,name,make", cases("encode"))
def test_encode(benchmark, metadata_payloads, size, v, name, make):
    bench(benchmark, metadata_payloads, "encode", size, v, make, name)


@pytest.mark.parametrize("size,v,name,make", cases("encoded_size"))
def test_encoded_size(benchmark, metadata_payloads, size, v, name, make):
    bench(benchmark, metadata_payloads, "encoded_size", size, v, make, name)


@pytest.mark.parametrize("scan", ["columnar", "names"])
def test_peak_memory_100k(metadata_payloads, extra_results, scan):
    """Peak memory of one columnar decode of the 100,000-topic body, outside any timing: tracemalloc
    sees Python's allocations, numpy's arrays and the extension's columns (it registers them)."""
    if ("100k", 12) not in metadata_payloads:
        pytest.skip("100k payload not made (KCODEC_BENCH_SIZES)")
    data = metadata_payloads[("100k", 12)]
    fn = columnar.tables if scan == "columnar" else columnar.topic_names
    gc.collect()
    tracemalloc.start()
    try:
        result = fn(MetadataResponse, data, 12)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(result.topics if scan == "columnar" else result.names) == 100_000
    extra_results[f"peak_memory_{scan}_100k"] = {
        "engine": columnar.ENGINE, "payload_bytes": len(data), "peak_bytes": peak, "kept_bytes": kept,
        "ratio": peak / len(data)}
