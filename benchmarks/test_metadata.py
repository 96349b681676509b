"""Decode, encode and encoded_size of the 1,000-topic Metadata payloads, for every backend here."""

from __future__ import annotations

import pytest

from kcodec._backend import available
from kcodec.ir import program_for
from kcodec.messages import MetadataResponse

BACKENDS = sorted(available().items())


@pytest.mark.parametrize("operation", ["decode", "encode", "encoded_size"])
@pytest.mark.parametrize("version", [1, 12])
@pytest.mark.parametrize("name,backend", BACKENDS, ids=[n for n, _ in BACKENDS])
def test_metadata_1k(benchmark, metadata_payloads, name, backend, version, operation):
    benchmark.group = f"metadata v{version} 1k {operation}"
    prog = program_for(MetadataResponse, version)
    data = metadata_payloads[version]
    msg, _ = backend.decode(prog, data)
    if operation == "decode":
        again, end = benchmark(backend.decode, prog, data)
        assert end == len(data) and again == msg
    elif operation == "encode":
        assert benchmark(backend.encode, prog, msg) == data
    else:
        assert benchmark(backend.encoded_size, prog, msg) == len(data)
