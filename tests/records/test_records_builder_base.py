"""BatchBuilder's settings and build: the Cython twin's BuilderBase against the reference (_PyBuilderBase)
take, refuse and build alike."""

from __future__ import annotations

from typing import Any

import pytest
from needs import need_extension

from kcodec.records import BatchBuilder, Compression, TimestampType
from kcodec.records._builder import _PyBuilderBase
from kcodec.records._select import available

FAST = available().get("cython")
need_extension(FAST, "the Cython record backend (kcodec.records._crecords): a C compiler and Cython at install")


def bases() -> tuple[type, type]:
    """The reference base and the twin over the same writer (the Cython one), so that only they differ: the
    reference's methods are put on the Cython writer here (under KCODEC_PURE its own base is the pure writer)."""
    methods = {k: vars(_PyBuilderBase)[k] for k in ("__init__", "_key", "_attributes", "build")}
    Reference = type("Reference", (FAST.RecordsWriter,),  # type: ignore[union-attr]
                     {"__slots__": _PyBuilderBase.__slots__, **methods, "_compressed": BatchBuilder._compressed})

    class Twin(FAST.BuilderBase):  # type: ignore[name-defined,misc,union-attr]
        _compressed = BatchBuilder._compressed

    return Reference, Twin


def outcome(fn: Any) -> Any:
    """What a call returns, or its error's type and text."""
    try:
        return fn()
    except Exception as e:  # (compared, not hidden)
        return type(e), str(e)


SETTINGS = [
    {}, {"compression": 1}, {"compression": Compression.ZSTD, "level": 5}, {"compression": Compression.LZ4},
    {"base_offset": 7, "producer_id": 3, "producer_epoch": 1, "base_sequence": 9, "transactional": True},
    {"control": True}, {"timestamp_type": 1}, {"timestamp_type": TimestampType.LOG_APPEND_TIME},
    {"partition_leader_epoch": 4}, {"compression": 9}, {"timestamp_type": 5}, {"magic": 3}, {"magic": "2"},
    {"magic": 1, "compression": 4}, {"magic": 0, "transactional": True}, {"magic": 1, "producer_id": 5},
    {"base_offset": 2**63}, {"producer_epoch": "1"}, {"base_sequence": 1.5}, {"producer_id": -2**63 - 1},
    {"compression": 2, "base_offset": 2**63}, {"compression": True, "control": 1, "transactional": [1]},
]


@pytest.mark.parametrize("settings", SETTINGS, ids=[str(s) for s in SETTINGS])
def test_the_twin_takes_refuses_and_builds_as_the_reference(settings):
    got = []
    for cls in bases():
        b = outcome(lambda: cls(**settings))
        if isinstance(b, tuple):
            got.append(b)
            continue
        steps = [outcome(b.build), b._key(0), outcome(b._attributes)]  # no records yet: an EncodeError
        for i in range(3):
            b.append(b"k%d" % i, b"v" * i, (), 1000 + i)
        first = outcome(b.build)
        steps += [first, outcome(b.build) is first or outcome(b.build)]  # built once while nothing changes
        b.base_offset = 11
        steps += [outcome(b.build), b.magic, b.compression, b.timestamp_type, b.level]
        got.append(steps)
    assert got[0] == got[1]


def test_magic_0_and_1_make_the_message_set_builder_whatever_the_base():
    for magic in (0, 1, True, 1.0):
        assert type(BatchBuilder(magic)).__name__ == "_LegacyBuilder"
        assert type(BatchBuilder(magic=magic)).__name__ == "_LegacyBuilder"
    assert type(BatchBuilder()) is BatchBuilder and type(BatchBuilder(2, compression=1)) is BatchBuilder
    class Mine(BatchBuilder):
        pass
    assert type(Mine(1)) is Mine  # (a subclass of its own is not switched, as before)
