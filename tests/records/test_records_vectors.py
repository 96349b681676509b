"""Real clients' record batches (tests/records/vectors, made by make_vectors.py) decode to exactly what
each client was asked to produce: every codec, magic 0, 1 and 2, idempotent producers' ids and sequences."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.register_assert_rewrite("records_expect")
import make_vectors
import peer_producers
from records_expect import check_decodes, records_backend  # noqa: F401 (a fixture)

from kcodec.records import RecordsError, iter_batches

VECTORS = Path(__file__).resolve().parent / "vectors"
NAMES = [name for name, *_ in make_vectors.plan()]


def load(name: str) -> tuple[bytes, dict]:
    return (VECTORS / f"{name}.bin").read_bytes(), json.loads((VECTORS / f"{name}.json").read_text())


def test_every_planned_vector_is_there_and_nothing_else() -> None:
    assert sorted(p.stem for p in VECTORS.glob("*.bin")) == sorted(NAMES)
    assert sorted(p.stem for p in VECTORS.glob("*.json")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_vector_was_made_from_the_current_messages(name: str) -> None:
    """A change to peer_producers.MESSAGES must re-make the vectors (make_vectors.py)."""
    _, about = load(name)
    null_headers = not about["client"].startswith(("kafka-python", "kafkajs"))
    assert about["messages"] == peer_producers.for_magic(about["magic"], null_headers)


@pytest.mark.parametrize("zero_copy", [False, True], ids=["bytes", "zero_copy"])
@pytest.mark.parametrize("name", NAMES)
def test_vector_decodes_to_what_was_produced(name: str, zero_copy: bool, records_backend: str) -> None:
    buf, about = load(name)
    check_decodes(buf, about, zero_copy=zero_copy)


@pytest.mark.parametrize("name", ["confluent-zstd", "kafka-python-magic1-lz4", "kafkajs-snappy",
                                  "kafka-python-magic0-none"])
def test_a_flipped_bit_in_a_vector_is_a_crc_error(name: str, records_backend: str) -> None:
    """The vectors' checksums are real: one flipped bit in the last byte fails the CRC check, by default."""
    buf, _ = load(name)
    bad = bytearray(buf)
    bad[-1] ^= 0x01
    with pytest.raises(RecordsError, match="(?i)crc"):
        for batch in iter_batches(bytes(bad)):
            list(batch)
