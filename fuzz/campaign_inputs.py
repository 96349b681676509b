"""The campaign's inputs: real and generated seeds, and structure-aware mutations of them.

Seeds (built once per campaign, then shared by every child process as a pickle):
  - ../shared/vectors/real-frames (requests and responses, whole frames and bodies) and the 1,000-topic
    Metadata bodies;
  - tests/records/vectors (real clients' records fields);
  - encodings of hypothesis-built instances of every message at every version (seeded: the same campaign
    seed gives the same instances), as bodies, and requests and responses also as whole frames;
  - record batches of magic 0, 1 and 2 with every compression codec, alone and two in a row, and as the
    records of Produce requests (so that mutated batches reach the broker's log).
Requests are also mutated value by value (campaign_fields.py): still well-formed, so that they reach the
broker's handlers.
Input i of a campaign is seed ``rng.choice`` mutated by ``mutate`` with ``Random(f"{seed}:{i}")``: any input
can be made again from (seed, i) alone.
"""

from __future__ import annotations

import json
import random
import struct
import warnings
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]


class Seed(NamedTuple):
    kind: str      # body, request, response, records (campaign_checks.CHECKS)
    meta: str      # body: "Class:version"; response: "key:version"; else ""
    data: bytes
    tags: int      # where the root's tagged-field section starts in data, -1 when unknown or none


# --------------------------------------------------------------------------------------------- seeds

def real_seeds(shared: Path) -> list[Seed]:
    import kcodec

    out = []
    real = shared / "vectors" / "real-frames"
    index = json.loads((real / "index.json").read_text())
    for name in sorted(index):
        frame, facts = (real / name).read_bytes(), index[name]
        key, version = facts["api_key"], facts["api_version"]
        if name.endswith("_response.bin"):
            out.append(Seed("response", f"{key}:{version}", frame, -1))
            cls = kcodec.message_class(key, "response")
            _, at = kcodec.decode_from(kcodec.messages.ResponseHeader, frame,
                                       kcodec.response_header_version(key, version), 4)
        else:
            out.append(Seed("request", "", frame, -1))
            cls = kcodec.message_class(key, "request")
            _, at, _ = kcodec.decode_request_header(frame)
        out.append(Seed("body", f"{cls.__name__}:{version}", frame[at:], -1))
    for v in (1, 12):
        body = (shared / "vectors" / "metadata" / f"metadata_v{v}_1k_body.bin").read_bytes()
        out.append(Seed("body", f"MetadataResponse:{v}", body, -1))
    for path in sorted((ROOT / "tests" / "records" / "vectors").glob("*.bin")):
        out.append(Seed("records", "", path.read_bytes(), -1))
    return out


def root_tag_start(cls: type, version: int, msg: Any) -> int:
    """Where the root's tagged-field section starts in msg's encoding (-1: not a flexible version)."""
    import kcodec
    from kcodec.core.ir import default_of, program_for

    prog = program_for(cls, version)
    if not prog.flexible:
        return -1
    bare = kcodec.decode(cls, kcodec.encode(msg, version), version)
    for op in prog.root.tagged:
        setattr(bare, op.attr, default_of(op))
    bare.unknown_tagged_fields = None
    return len(kcodec.encode(bare, version)) - 1


def instance_seeds(seed: int, per_case: int = 2) -> list[Seed]:
    """Hypothesis-built instances of every message at every version (seeded), as bodies and frames."""
    import kcodec
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from kcodec import definitions
    from kcodec.testing import instances

    out = []
    for name in definitions.names():
        cls = getattr(kcodec.messages, name)
        for version in definitions.get(name).versions:
            made: list[Any] = []

            @hypothesis_seed(seed)
            @settings(max_examples=per_case, database=None, phases=[Phase.generate], deadline=None,
                      suppress_health_check=list(HealthCheck))
            @given(instances(cls, version))
            def collect(msg: Any) -> None:
                made.append(msg)

            collect()
            for msg in made:
                body = kcodec.encode(msg, version)
                tags = _tags_or_none(cls, version, msg)
                out.append(Seed("body", f"{name}:{version}", body, tags))
                kind = getattr(cls, "KIND", None)
                if kind == "request":
                    frame = kcodec.encode_request(msg, version, correlation_id=7, client_id="fuzz")
                    out.append(Seed("request", "", frame, tags + len(frame) - len(body) if tags >= 0 else -1))
                elif kind == "response":
                    frame = kcodec.encode_response(msg, version, correlation_id=7)
                    out.append(Seed("response", f"{cls.API_KEY}:{version}", frame,
                                    tags + len(frame) - len(body) if tags >= 0 else -1))
    return out


def _tags_or_none(cls: type, version: int, msg: Any) -> int:
    try:
        return root_tag_start(cls, version, msg)
    except Exception:  # a message whose defaults do not encode: no tag hint, the bytes still serve
        return -1


def record_seeds() -> list[Seed]:
    import kcodec
    from kcodec.records import BatchBuilder, Compression

    batches = []
    for magic in (0, 1, 2):
        for codec in Compression:
            if magic < 2 and codec == Compression.ZSTD:
                continue
            for n, extra in ((1, {}), (4, {"base_offset": 100}),
                             (3, {"producer_id": 9, "producer_epoch": 1, "base_sequence": 0} if magic == 2 else {})):
                b = BatchBuilder(magic=magic, compression=codec, **extra)
                for i in range(n):
                    b.append(None if i == 1 else b"key%d" % i, b"value" * i if i != 2 else None,
                             headers=[("h", b"x"), ("n", None)] if magic == 2 else (), timestamp=1000 + i)
                batches.append(b.build())
    out = [Seed("records", "", b, -1) for b in batches]
    out += [Seed("records", "", batches[i] + batches[-1 - i], -1) for i in range(0, len(batches), 3)]
    for i, batch in enumerate(batches[::4]):  # as Produce requests: mutations reach the broker's log
        out.append(Seed("request", "", produce_frame(batch, (3, 9)[i % 2]), -1))
    return out


def produce_frame(records: bytes, version: int) -> bytes:
    import kcodec
    from kcodec.messages import ProduceRequest

    req = ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t0", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])])
    return kcodec.encode_request(req, version, correlation_id=9, client_id="fuzz")


def build_seeds(seed: int, shared: Path) -> list[Seed]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return real_seeds(shared) + record_seeds() + instance_seeds(seed)


# --------------------------------------------------------------------------------------------- mutations

INT_EDGES = {
    1: [0, 1, 0x7F, 0x80, 0xFF],
    2: [0, 1, 0x7FFF, 0x8000, 0xFFFF, 0xFFFE],
    4: [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 0x00010000],
    8: [0, 1, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF],
}
VARINTS = [b"\x00", b"\x01", b"\x02", b"\x7f", b"\x80\x01", b"\xff\x7f", b"\xff\xff\x03", b"\xff\xff\xff\xff\x07",
           b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\x1f", b"\x80\x80\x80\x80\x00", b"\x80\x80\x80\x80\x80\x00",
           b"\xfe\xff\xff\xff\x0f", b"\xff" * 9 + b"\x01", b"\x80" * 10 + b"\x00"]


def uvarint_at(data: bytes, pos: int) -> tuple[int, int]:
    """(value, end) of the unsigned varint at pos; end -1 when it does not end in the data."""
    value = shift = 0
    while pos < len(data):
        b = data[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        if not b & 0x80:
            return value, pos
        shift += 7
    return value, -1


def set_int(rng: random.Random, b: bytearray) -> None:
    """A big-endian integer field at a random place set to an edge value, or its value inflated or nudged."""
    width = rng.choice([1, 2, 4, 4, 8])
    if len(b) < width:
        return
    i = rng.randrange(len(b) - width + 1)
    old = int.from_bytes(b[i:i + width], "big")
    new = rng.choice([rng.choice(INT_EDGES[width]), old + rng.choice([1, -1, 2, 100]), old * rng.choice([2, 16, 1000]),
                      len(b), len(b) - i])
    b[i:i + width] = (new % (1 << (8 * width))).to_bytes(width, "big")


def set_varint(rng: random.Random, b: bytearray) -> None:
    """The varint starting at a random place replaced by an edge value (longer, shorter or overlong)."""
    if not b:
        return
    i = rng.randrange(len(b))
    _, end = uvarint_at(b, i)
    end = len(b) if end < 0 else end
    value = rng.choice(VARINTS)
    if rng.random() < 0.3:  # a count or compact length inflated by a little
        old, _ = uvarint_at(b, i)
        value = _uvarint(old + rng.choice([1, 2, 64, 1 << 20]))
    b[i:end] = value


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def tag_entries(data: bytes, start: int) -> tuple[list[bytes], int]:
    """The root tagged-field section's entries (each raw: tag, size, bytes), and where the section ends."""
    count, pos = uvarint_at(data, start)
    entries = []
    for _ in range(count if pos > 0 else 0):
        first = pos
        _, pos = uvarint_at(data, pos)
        if pos < 0:
            break
        size, pos = uvarint_at(data, pos)
        if pos < 0 or pos + size > len(data):
            break
        pos += size
        entries.append(data[first:pos])
    return entries, pos


def mutate_tags(rng: random.Random, data: bytes, start: int) -> bytes:
    """The root tagged-field section with an entry duplicated, entries reordered, an unknown tag added, or
    its count inflated."""
    entries, end = tag_entries(data, start)
    if end < 0:
        return data
    op = rng.randrange(4)
    if op == 0 and entries:
        entries.insert(rng.randrange(len(entries) + 1), rng.choice(entries))
    elif op == 1 and len(entries) > 1:
        entries.reverse()
    elif op == 2:
        tag = rng.choice([0, 1, 99, 0x7FFFFFFF, 0xFFFFFFFF])
        entries.insert(rng.randrange(len(entries) + 1), _uvarint(tag) + _uvarint(3) + b"abc")
    else:
        return data[:start] + _uvarint(len(entries) + rng.choice([1, 5, 1 << 28])) + b"".join(entries) + data[end:]
    return data[:start] + _uvarint(len(entries)) + b"".join(entries) + data[end:]


def splice(rng: random.Random, a: bytes, b: bytes) -> bytes:
    """A prefix of a and a suffix of b, or a piece of b over a place of a."""
    if rng.random() < 0.5:
        return a[:rng.randint(0, len(a))] + b[rng.randint(0, len(b)):]
    i, j = rng.randint(0, len(a)), rng.randint(0, len(b))
    piece = b[j:j + rng.randint(1, 64)]
    return a[:i] + piece + a[i + len(piece):]


def mutate(rng: random.Random, seed: Seed, other: Seed) -> bytes:
    """seed's bytes after 1-4 mutations; frames mostly keep a true size prefix, v2 batches a true CRC."""
    data = seed.data
    if seed.kind == "request" and rng.random() < 0.35:  # odd values in a well-formed request: the handlers
        from campaign_fields import mutate_fields
        fielded = mutate_fields(rng, data)
        if fielded is not None:
            return fielded
    if seed.tags >= 0 and rng.random() < 0.25:
        data = mutate_tags(rng, data, seed.tags)
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(9)
        i = rng.randrange(len(b)) if b else 0
        if op == 0 and b:
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            set_int(rng, b)
        elif op == 2:
            set_varint(rng, b)
        elif op == 3:
            del b[rng.randint(0, len(b)):]
        elif op == 4:
            b = bytearray(splice(rng, bytes(b), other.data))
        elif op == 5:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 6:
            del b[i:i + rng.randint(1, 8)]
        elif op == 7 and b:
            b[i] = rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF])
        elif op == 8 and b:  # a run of bytes copied from elsewhere in the same input
            j = rng.randrange(len(b))
            b[i:i] = b[j:j + rng.randint(1, 32)]
    if seed.kind in ("request", "response") and len(b) >= 4 and rng.random() < 0.85:
        b[0:4] = struct.pack(">i", len(b) - 4)
    if seed.kind == "records" and rng.random() < 0.7:
        fix_crcs(b)
    return bytes(b)


def fix_crcs(b: bytearray) -> None:
    """Rewrite the CRC of every v2 batch in a records field, so that the mutation itself is what is read."""
    from kcodec.records import crc32c

    pos = 0
    while pos + 61 <= len(b):
        length = struct.unpack_from(">i", b, pos + 8)[0]
        end = pos + 12 + length
        if length < 49 or end > len(b):
            return
        if b[pos + 16] == 2:
            struct.pack_into(">I", b, pos + 17, crc32c(bytes(b[pos + 21:end])))
        pos = end


KIND_WEIGHTS = {"body": 35, "request": 25, "response": 15, "records": 25}
_BY_KIND: dict[int, dict[str, list[Seed]]] = {}


def make_input(seeds: list[Seed], campaign_seed: int, i: int) -> tuple[str, str, bytes]:
    """Input i of a campaign: (kind, meta, data). The kind is drawn first (the generated instances far
    outnumber the record seeds), then a seed of that kind, and another of it to splice from."""
    by_kind = _BY_KIND.get(id(seeds))
    if by_kind is None:
        by_kind = _BY_KIND[id(seeds)] = {}
        for s in seeds:
            by_kind.setdefault(s.kind, []).append(s)
    rng = random.Random(f"{campaign_seed}:{i}")
    kinds = sorted(by_kind)
    kind = rng.choices(kinds, [KIND_WEIGHTS.get(k, 10) for k in kinds])[0]
    s, other = rng.choice(by_kind[kind]), rng.choice(by_kind[kind])
    return s.kind, s.meta, mutate(rng, s, other)
