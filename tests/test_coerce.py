"""The int-like public arguments (kcodec.core.coerce): an int or anything with __index__ taken, a float refused
with operator.index's TypeError, the same text from both backends (run this file with KCODEC_PURE=1 too)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import kcodec
from kcodec import records as R
from kcodec.core.coerce import as_index, as_size
from kcodec.messages import ApiVersionsRequest

REQ = ApiVersionsRequest(client_software_name="x", client_software_version="1")
BODY = kcodec.encode(REQ, 3)
_b = R.BatchBuilder()
_b.append(b"k", b"v", (), 1)
BATCH = bytes(_b.build())
FLOAT = "'float' object cannot be interpreted as an integer"

CALLS = {  # each public argument the coercion serves, given `n`
    "decode_from offset": lambda n: kcodec.decode_from(ApiVersionsRequest, BODY, 3, n),
    "decode_from end": lambda n: kcodec.decode_from(ApiVersionsRequest, BODY, 3, 0, n),
    "encode_into offset": lambda n: kcodec.encode_into(REQ, 3, bytearray(64), n),
    "encode_buffers threshold": lambda n: kcodec.encode_buffers(REQ, 3, threshold=n),
    "read_batches max_uncompressed": lambda n: R.read_batches(BATCH, max_uncompressed=n),
}
INT = {"decode_from offset": 0, "decode_from end": len(BODY), "encode_into offset": 0,
       "encode_buffers threshold": 0, "read_batches max_uncompressed": 1 << 20}


@pytest.mark.parametrize("name", CALLS)
def test_a_float_is_operator_index_s_type_error(name):
    with pytest.raises(TypeError, match=FLOAT):
        CALLS[name](INT[name] - 0.5 if name == "decode_from end" else INT[name] + 0.5)  # (within the buffer)


@pytest.mark.parametrize("name", CALLS)
def test_a_numpy_integer_is_taken_as_its_int(name):
    assert repr(CALLS[name](np.int64(INT[name]))) == repr(CALLS[name](INT[name]))


def test_sizes_past_sys_maxsize_are_capped_and_negatives_kept_for_the_caller():
    assert as_size(sys.maxsize + 1) == as_size(np.uint64(2**64 - 1)) == sys.maxsize
    assert as_size(-5) == as_index(-5) == -5
    assert kcodec.encode_buffers(REQ, 3, threshold=1 << 80).join() == BODY
    assert len(R.read_batches(BATCH, max_uncompressed=1 << 80).batches) == 1
    with pytest.raises(ValueError, match="max_uncompressed -1 is negative"):
        R.read_batches(BATCH, max_uncompressed=-1)
