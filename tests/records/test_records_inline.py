"""_crecords.pyx (with the .pxi files it includes) forces some of its functions in line, and keeps the record walk's
cold paths out of line, by naming them as Cython names them in C (gcc kept the record walk out of line otherwise:
~40 instructions a record). Were Cython to name them otherwise, gcc would only warn and the walk would quietly
slow down: the generated C must still define each name the .pyx names."""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.checkout  # the generated C is the checkout's build (setup.py build_ext --inplace)

RECORDS = Path(__file__).resolve().parents[2] / "kcodec" / "records"


def test_every_forced_name_is_a_function_cython_generates():
    pyx = "".join(p.read_text() for p in [RECORDS / "_crecords.pyx", *sorted(RECORDS.glob("_crecords*.pxi"))])
    forced = re.findall(r"(__pyx_f_\w+)\([^;]*?__attribute__\(\(always_inline\)\)", pyx)
    kept_out = re.findall(r"(__pyx_f_\w+)\([^;]*?__attribute__\(\(noinline\)\)", pyx)
    prefix = "__pyx_f_6kcodec_7records_9_crecords_"
    assert sorted(forced) == [prefix + n for n in ("fast_record", "read_short", "short_unsigned", "short_varint",
                                                   "walk_record")], forced
    assert sorted(kept_out) == [prefix + "skip_headers", prefix + "skip_record"], kept_out
    c_file = RECORDS / "_crecords.c"
    assert c_file.is_file(), "build the extensions in place first (setup.py build_ext --inplace)"
    generated = c_file.read_text()
    for name in forced:
        assert re.search(rf"^static CYTHON_INLINE \w+ {name}\(.*/\*proto\*/$", generated, re.M), name
    for name in kept_out:
        assert re.search(rf"^static \w+ {name}\(.*/\*proto\*/$", generated, re.M), name
