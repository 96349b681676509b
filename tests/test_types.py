"""Every field type and encoding, on a synthetic message that uses all of them (no Kafka API uses
uint32, for one), checked byte for byte where the layout is easy to write down."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given

from kcodec import definitions
from kcodec.core import ir
from kcodec.core.backend import available
from kcodec.exceptions import DecodeError, EncodeError
from kcodec.messages import _generate
from kcodec.testing import program_instances

INNER = [{"name": "X", "type": "int16", "versions": "0+"}]
ALL_TYPES = {
    "name": "AllTypesRequest", "type": "request", "apiKey": 32000, "validVersions": "0-2", "flexibleVersions": "2+",
    "fields": [
        {"name": "Flag", "type": "bool", "versions": "0+", "default": "true"},
        {"name": "I8", "type": "int8", "versions": "0+", "default": "-8"},
        {"name": "I16", "type": "int16", "versions": "0+", "default": "0x10"},
        {"name": "U16", "type": "uint16", "versions": "0+", "default": "65535"},
        {"name": "I32", "type": "int32", "versions": "0+", "default": "-2147483648"},
        {"name": "U32", "type": "uint32", "versions": "0+", "default": "0xffffffff"},
        {"name": "I64", "type": "int64", "versions": "0+", "default": "-1"},
        {"name": "F64", "type": "float64", "versions": "0+", "default": "1.5"},
        {"name": "Id", "type": "uuid", "versions": "0+"},
        {"name": "Str", "type": "string", "versions": "0+", "default": "hello"},
        {"name": "NullStr", "type": "string", "versions": "0+", "nullableVersions": "0+", "default": "null"},
        {"name": "Data", "type": "bytes", "versions": "0+"},
        {"name": "NullData", "type": "bytes", "versions": "1+", "nullableVersions": "1+", "default": "null",
         "ignorable": True},
        {"name": "Recs", "type": "records", "versions": "0+", "nullableVersions": "0+"},
        {"name": "Ints", "type": "[]int32", "versions": "0+"},
        {"name": "NullLongs", "type": "[]int64", "versions": "0+", "nullableVersions": "0+", "default": "null"},
        {"name": "Names", "type": "[]string", "versions": "0+"},
        {"name": "Ids", "type": "[]uuid", "versions": "0+"},
        {"name": "Items", "type": "[]AllTypesRequestItem", "versions": "0+", "fields": [
            {"name": "Key", "type": "string", "versions": "0+", "mapKey": True},
            {"name": "Value", "type": "int32", "versions": "0+"},
            {"name": "Extra", "type": "int8", "versions": "2+", "taggedVersions": "2+", "tag": 0}]},
        {"name": "Inner", "type": "Inner", "versions": "0+", "fields": INNER},
        {"name": "MaybeInner", "type": "MaybeInner", "versions": "1+", "nullableVersions": "1+", "default": "null",
         "ignorable": True, "fields": INNER},
        {"name": "ClassicStr", "type": "string", "versions": "0+", "flexibleVersions": "none"},
        {"name": "TaggedStr", "type": "string", "versions": "2+", "taggedVersions": "2+", "tag": 0,
         "nullableVersions": "2+", "default": "null"},
        {"name": "TaggedCommon", "type": "Common", "versions": "2+", "taggedVersions": "2+", "tag": 1},
    ],
    "commonStructs": [{"name": "Common", "versions": "0+", "fields": [{"name": "A", "type": "int64", "versions": "0+"}]}],
}


@pytest.fixture(scope="module")
def all_types():
    mdef = definitions.parse(ALL_TYPES)
    ns = {"__name__": "kcodec.messages.all_types_request", "__package__": "kcodec.messages"}
    exec(compile(_generate.message_source(mdef), "<all_types>", "exec"), ns)
    cls = ns["AllTypesRequest"]
    return cls, {v: ir.compile_program(mdef, v, cls) for v in mdef.versions}


BACKENDS = sorted(available().items())


@pytest.mark.parametrize("name,backend", BACKENDS)
@pytest.mark.parametrize("version", [0, 1, 2])
def test_all_types_roundtrip(all_types, name, backend, version):
    cls, progs = all_types
    prog = progs[version]

    @given(program_instances(prog))
    def check(msg):
        data = backend.encode(prog, msg)
        assert backend.encoded_size(prog, msg) == len(data)
        again, end = backend.decode(prog, data)
        assert end == len(data) and again == msg

    check()


def test_defaults_of_every_type(all_types):
    cls, _ = all_types
    m = cls()
    assert (m.flag, m.i8, m.i16, m.u16, m.i32, m.u32, m.i64, m.f64) == \
        (True, -8, 16, 65535, -(1 << 31), 0xFFFFFFFF, -1, 1.5)
    assert m.id == uuid.UUID(int=0) and m.str == "hello" and m.null_str is None and m.data == b""
    assert m.recs is None and m.ints == [] and m.null_longs is None and m.inner == cls.Inner()
    assert m.maybe_inner is None and m.tagged_common == cls.Common()


def _scalars_v0(cls):
    return cls(flag=True, i8=-1, i16=2, u16=0xFFFF, i32=-3, u32=0xFFFFFFFE, i64=1 << 40, f64=-0.5,
               id=uuid.UUID(int=1), str="é", null_str=None, data=b"\x01", recs=None, ints=[7],
               null_longs=None, names=["a"], ids=[], items=[cls.Item(key="k", value=9)],
               inner=cls.Inner(x=5), classic_str="c")


@pytest.mark.parametrize("name,backend", BACKENDS)
def test_classic_layout_byte_for_byte(all_types, name, backend):
    cls, progs = all_types
    want = (b"\x01" + b"\xff" + struct.pack(">hHiIqd", 2, 0xFFFF, -3, 0xFFFFFFFE, 1 << 40, -0.5)
            + uuid.UUID(int=1).bytes
            + b"\x00\x02\xc3\xa9"               # string: int16 length + UTF-8
            + b"\xff\xff"                       # null string
            + b"\x00\x00\x00\x01\x01"           # bytes: int32 length
            + b"\xff\xff\xff\xff"               # null records
            + b"\x00\x00\x00\x01\x00\x00\x00\x07"  # [7]
            + b"\xff\xff\xff\xff"               # null array
            + b"\x00\x00\x00\x01\x00\x01a"      # ["a"]
            + b"\x00\x00\x00\x00"               # []
            + b"\x00\x00\x00\x01\x00\x01k\x00\x00\x00\x09"  # [Item(k, 9)]
            + b"\x00\x05"                       # Inner(x=5)
            + b"\x00\x01c")                     # classic string
    assert backend.encode(progs[0], _scalars_v0(cls)) == want


@pytest.mark.parametrize("name,backend", BACKENDS)
def test_flexible_layout_byte_for_byte(all_types, name, backend):
    cls, progs = all_types
    m = _scalars_v0(cls)
    m.items[0].extra = 3
    m.tagged_str = "t"
    m.unknown_tagged_fields = {7: b"\xaa", 5: b""}
    data = backend.encode(progs[2], m)
    tail = (b"\x02\x02a"                        # compact array of compact strings
            + b"\x01"                           # []
            + b"\x02\x02k\x00\x00\x00\x09\x01\x00\x01\x03"  # Item with tagged Extra=3
            + b"\x00\x05\x00"                   # Inner + its empty tag section
            + b"\xff"                           # null MaybeInner
            + b"\x00\x01c"                      # flexibleVersions "none": still int16 length
            + b"\x03\x00\x02\x02t\x05\x00\x07\x01\xaa")  # tags 0 (TaggedStr), 5, 7 ascending
    assert data.endswith(tail), data.hex()
    again, _ = backend.decode(progs[2], data)
    assert again == m and again.unknown_tagged_fields == {5: b"", 7: b"\xaa"}


@pytest.mark.parametrize("name,backend", BACKENDS)
def test_version_rules(all_types, name, backend):
    cls, progs = all_types
    m = cls(null_data=b"x")           # ignorable, absent in v0: dropped
    assert backend.decode(progs[0], backend.encode(progs[0], m))[0].null_data is None
    m = cls(maybe_inner=cls.MaybeInner(x=1))
    backend.encode(progs[0], m)       # ignorable too
    m = cls(tagged_common=cls.Common(a=1))  # tagged, absent before v2, not ignorable
    with pytest.raises(EncodeError, match="TaggedCommon") as e:
        backend.encode(progs[1], m)
    assert e.value.path == "tagged_common" and e.value.version == 1
    with pytest.raises(EncodeError, match="collides"):
        backend.encode(progs[2], cls(unknown_tagged_fields={1: b""}))
    with pytest.raises(EncodeError) as e:
        backend.encode(progs[0], cls(u32=1 << 32))
    assert e.value.path == "u32"
    with pytest.raises(EncodeError) as e:
        backend.encode(progs[0], cls(items=[cls.Item(), cls.Item(key=None)]))
    assert e.value.path == "items[1].key"


@pytest.mark.parametrize("name,backend", BACKENDS)
def test_tagged_field_must_fill_its_size(all_types, name, backend):
    cls, progs = all_types
    data = bytearray(backend.encode(progs[2], cls(tagged_str="t")))
    # the tagged section ends "01 00 02 02 74": claim 3 bytes for a 2-byte compact string
    assert data.endswith(b"\x01\x00\x02\x02t")
    bad = bytes(data[:-5]) + b"\x01\x00\x03\x02t\x00"
    with pytest.raises(DecodeError, match="read 2 of its 3 bytes") as e:
        backend.decode(progs[2], bad)
    assert e.value.path == "tagged_str"
