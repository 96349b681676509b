"""Fresh batches from the installed clients, captured on every run and decoded, so that the stored vectors
(test_records_vectors.py) cannot go stale silently when a client changes what it writes."""

from __future__ import annotations

import pytest

pytest.register_assert_rewrite("records_expect")
import make_vectors
import peer_producers as pp
from records_expect import check_decodes, need

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("name", ["confluent-idempotent-zstd", "confluent-lz4", "kafka-python-snappy",
                                  "kafka-python-magic1-gzip", "kafka-python-magic0-lz4"])
def test_fresh_batch_decodes_to_what_was_produced(name: str) -> None:
    _, magic, idempotent, produce, options = next(v for v in make_vectors.plan() if v[0] == name)
    need("confluent_kafka" if produce is pp.confluent else "kafka")
    records, about = make_vectors.capture(produce, magic, idempotent, **options)
    check_decodes(records, about)
    check_decodes(records, about, zero_copy=True)
