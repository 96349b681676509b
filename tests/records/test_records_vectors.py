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

from kcodec.records import BatchBuilder, Compression, RecordsError, iter_batches, record_columns

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


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_kcodec_lz4_frames_have_independent_blocks_like_every_client(magic: int) -> None:
    """Every client sets the lz4 frame's block-independence flag, and Kafka's Java reader refuses a frame
    without it ("Dependent block stream is unsupported"): kcodec's frames set it too."""
    flag = 0x20  # FLG bit 5
    for name in NAMES:
        buf, about = load(name)
        if about["compression"] == "lz4":
            frame = buf.index(b"\x04\x22\x4d\x18")
            assert buf[frame + 4] & flag, name
    b = BatchBuilder(magic=magic, compression=Compression.LZ4)
    for i in range(100):
        b.append(b"k%d" % i, b"kcodec " * 100, timestamp=1_700_000_000_000 if magic else None)
    ours = b.build()
    assert ours[ours.index(b"\x04\x22\x4d\x18") + 4] & flag
    assert [r.value for batch in iter_batches(ours) for r in batch] == [b"kcodec " * 100] * 100


@pytest.mark.parametrize("name", NAMES)
def test_vector_columns_match_its_records(name: str, records_backend: str) -> None:
    """The columnar view of each vector holds what iterating its records gives, row for row."""
    buf, _ = load(name)
    records = [r for batch in iter_batches(buf) for r in batch]
    cols = record_columns(buf)
    assert len(cols) == len(records) and cols.partial_bytes == 0
    assert list(cols.offset) == [r.offset for r in records]
    assert list(cols.timestamp) == [r.timestamp for r in records]
    assert list(cols.header_count) == [len(r.headers) for r in records]
    assert [(cols.key(i), cols.value(i)) for i in range(len(cols))] == [(r.key, r.value) for r in records]
