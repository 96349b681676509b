"""Fresh batches from the installed clients, captured on every run: they decode to what was produced, and
they equal the stored vectors (test_records_vectors.py) byte for byte, so that the vectors cannot go stale
silently when a client changes what it writes (then re-make them: tests/records/make_vectors.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.register_assert_rewrite("records_expect")
import make_vectors
import peer_producers as pp
from records_expect import check_decodes, need

pytestmark = pytest.mark.interop
VECTORS = Path(__file__).resolve().parent / "vectors"


# No gzip from kafka-python: Python's gzip module puts the time in its header, so those never repeat.
@pytest.mark.parametrize("name", ["confluent-idempotent-zstd", "confluent-gzip", "kafka-python-zstd",
                                  "kafka-python-magic1-snappy", "kafka-python-magic0-lz4"])
def test_fresh_batch_decodes_and_equals_the_stored_vector(name: str) -> None:
    _, magic, idempotent, produce, options = next(v for v in make_vectors.plan() if v[0] == name)
    need("confluent_kafka" if produce is pp.confluent else "kafka")
    records, about = make_vectors.capture(produce, magic, idempotent, **options)
    check_decodes(records, about)
    check_decodes(records, about, zero_copy=True)
    stale = f"the client writes other bytes than tests/records/vectors/{name}: re-make the vectors"
    stored = json.loads((VECTORS / f"{name}.json").read_text())
    assert json.loads(json.dumps({"name": name, **about})) == stored, stale
    assert records == (VECTORS / f"{name}.bin").read_bytes(), stale
