"""Decode, encode and encoded_size of the 1,000-topic Metadata payloads, for every backend here."""

from __future__ import annotations

import pytest

from kcodec._backend import available
from kcodec.ir import program_for
from kcodec.messages import MetadataResponse

BACKENDS = sorted(available().items())


@pytest.mark.parametrize("version", [1, 12])
@pytest.mark.parametrize("name,backend", BACKENDS, ids=[n for n, _ in BACKENDS])
def test_decode(benchmark, metadata_payloads, name, backend, version):
    benchmark.group = f"metadata v{version} 1k decode"
    prog = program_for(MetadataResponse, version)
    data = metadata_payloads[version]
    msg, end = benchmark(backend.decode, prog, data)
    assert end == len(data) and len(msg.topics) == 1000


@pytest.mark.parametrize("version", [1, 12])
@pytest.mark.parametrize("name,backend", BACKENDS, ids=[n for n, _ in BACKENDS])
def test_encode(benchmark, metadata_payloads, name, backend, version):
    benchmark.group = f"metadata v{version} 1k encode"
    prog = program_for(MetadataResponse, version)
    msg, _ = backend.decode(prog, metadata_payloads[version])
    assert benchmark(backend.encode, prog, msg) == metadata_payloads[version]


@pytest.mark.parametrize("version", [1, 12])
@pytest.mark.parametrize("name,backend", BACKENDS, ids=[n for n, _ in BACKENDS])
def test_encoded_size(benchmark, metadata_payloads, name, backend, version):
    benchmark.group = f"metadata v{version} 1k encoded_size"
    prog = program_for(MetadataResponse, version)
    msg, _ = backend.decode(prog, metadata_payloads[version])
    assert benchmark(backend.encoded_size, prog, msg) == len(metadata_payloads[version])
