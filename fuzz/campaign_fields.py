"""Value-level mutations of request frames: decode, set one field to an edge value, encode again.

Byte mutations mostly make requests that do not decode (the broker closes those at once); these stay
well-formed, so that odd but valid values reach the broker's handlers: edge integers, empty and long
strings, empty, repeated and long arrays, null where the schema allows it.
"""

from __future__ import annotations

import random
import uuid
from typing import Any, Optional

import kcodec

INTS = [0, 1, -1, -2, 127, 128, 32767, -32768, 65535, 2**31 - 1, -2**31, 2**32 - 1, 2**63 - 1, -2**63]
STRINGS = ["", "x" * 300, "\x00", "é" * 40, "..", "__consumer_offsets", "t0", "*", " "]
BYTES = [b"", b"\x00" * 64, b"\xff" * 8]


def fields(obj: Any, depth: int = 0) -> list[tuple[Any, str]]:
    """(owner, attribute) of every field of obj and its structs, a few levels down."""
    out = []
    for attr in getattr(type(obj), "_ATTRS", ()):
        out.append((obj, attr))
        value = getattr(obj, attr)
        items = value if isinstance(value, list) else [value]
        for item in items[:3]:
            if hasattr(type(item), "_ATTRS") and depth < 4:
                out += fields(item, depth + 1)
    return out


def edge_value(rng: random.Random, value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return rng.choice(INTS + [value + 1, value - 1, value * 1000])
    if isinstance(value, str) or value is None:
        return rng.choice(STRINGS + [None])
    if isinstance(value, (bytes, bytearray, memoryview)):
        return rng.choice(BYTES + [None])
    if isinstance(value, uuid.UUID):
        return rng.choice([uuid.UUID(int=0), uuid.UUID(int=1), uuid.uuid4()])
    if isinstance(value, float):
        return rng.choice([0.0, -1.0, float("nan"), float("inf")])
    if isinstance(value, list):
        return rng.choice([[], value * 3, value[:1] * 60, None, [rng.choice(INTS)] * 5 if not value else value[::-1]])
    return value


def mutate_fields(rng: random.Random, frame: bytes) -> Optional[bytes]:
    """frame with 1-3 fields of its request set to edge values; None when it does not decode or re-encode."""
    try:
        header, req = kcodec.decode_request(frame)
    except kcodec.KcodecError:
        return None
    for _ in range(rng.randint(1, 3)):
        places = fields(req)
        if not places:
            break
        owner, attr = rng.choice(places)
        setattr(owner, attr, edge_value(rng, getattr(owner, attr)))
    try:
        return kcodec.encode_request(req, header.request_api_version, header.correlation_id, header.client_id)
    except (kcodec.KcodecError, TypeError, ValueError, OverflowError):
        return None
