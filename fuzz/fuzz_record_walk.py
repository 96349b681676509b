"""A seeded mutation loop aimed at the record walk of summarize and fill_columns (records15's fast path, which
reads one- and two-byte varints without a bound check a byte): records of 1-3 byte varints, lengths near the
buffer's end, negative and huge lengths, headers, placed so that their last byte is the one before a PROT_NONE
page (tests/records/guard_page.py): an overread faults, with or without AddressSanitizer. Every result (values
or error) is compared with the reference's (kcodec.records._pure) on the same bytes.

    nice -n 10 .venv/bin/python fuzz/fuzz_record_walk.py --seconds 600 --seed 1

Under AddressSanitizer (extensions built with KCODEC_SANITIZE=address, see the Makefile's fuzz-atheris), the
runtime preloaded: LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0:abort_on_error=1.
A finding is printed with its seed and input (hex) and ends the run with status 1.
"""

from __future__ import annotations

import argparse
import random
import struct
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "records"))
from guard_page import GuardedArena  # noqa: E402

from kcodec.records import RecordsError, _pure, iter_batches, record_columns, record_summary  # noqa: E402
from kcodec.records._select import available  # noqa: E402

BASE_TS = 1_700_000_000_000
KEY_SIZES = (0, 1, 3, 62, 63, 64, 200)
EDGES = (0, 1, -1, 63, 64, -64, -65, 8191, 8192, -8192, -8193, 2**31 - 1, -2**31)


def varint(v: int, width: int = 0) -> bytes:
    u = ((v << 1) ^ (v >> 63)) & ((1 << 64) - 1)
    out = bytearray()
    while u >= 0x80:
        out.append(u & 0x7F | 0x80)
        u >>= 7
    out.append(u)
    while len(out) < width:  # padded: continuation bytes of 0
        out[-1] |= 0x80
        out.append(0)
    return bytes(out)


def width(rng: random.Random) -> int:
    return rng.choice((0, 0, 0, 1, 2, 2, 3))


def lie(rng: random.Random, true: int, room: int) -> int:
    """A length that may not be the true one: off by a little, to the buffer's end, negative or huge."""
    return rng.choice((true, true, true, true + 1, true - 1, true + 2, room, room - 1, room + 1, -1, -2, -true,
                       2**31 - 1, -2**31, 8191, 8192, 63, 64, rng.randrange(-70, 9000)))


def record(rng: random.Random) -> bytes:
    key = None if rng.random() < 0.2 else bytes(rng.randrange(256) for _ in range(rng.choice(KEY_SIZES)))
    value = None if rng.random() < 0.2 else b"v" * rng.choice((0, 1, 5, 63, 64, 65, 127, 128, 300, 8200))
    headers = [(b"h" * rng.choice((0, 1, 70)), rng.choice((None, b"", b"x" * 64)))
               for _ in range(rng.choice((0, 0, 0, 1, 2)))]
    lies = rng.random() < 0.12
    klen = -1 if key is None else len(key)
    vlen = -1 if value is None else len(value)
    if lies:
        klen, vlen = lie(rng, klen, 30), lie(rng, vlen, 30)
    body = (bytes([rng.choice((0, 0, 0xFF))]) + varint(rng.choice(EDGES), width(rng))
            + varint(rng.choice(EDGES), width(rng)) + varint(klen, width(rng)) + (key or b"")
            + varint(vlen, width(rng)) + (value or b"")
            + varint(lie(rng, len(headers), 3) if lies else len(headers), width(rng))
            + b"".join(varint(len(k)) + k + varint(-1 if v is None else len(v)) + (v or b"") for k, v in headers))
    n = lie(rng, len(body), len(body)) if lies else len(body)
    return varint(n, rng.choice((0, 0, 0, 2, 3))) + body


def mutate(rng: random.Random, data: bytearray) -> bytearray:
    for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
        if not data:
            break
        what = rng.randrange(4)
        at = rng.randrange(max(len(data) - 12, 0), len(data)) if rng.random() < 0.5 else rng.randrange(len(data))
        if what == 0:
            data[at] = rng.choice((0, 1, 2, 0x7E, 0x7F, 0x80, 0x81, 0xFE, 0xFF, rng.randrange(256)))
        elif what == 1:
            del data[rng.randrange(len(data)) if rng.random() < 0.5 else max(len(data) - rng.randint(1, 3), 0):]
        elif what == 2:
            data += bytes(rng.choice((0, 0x80, 0xFF, 1)) for _ in range(rng.randint(1, 3)))
        else:
            data[at:at] = varint(rng.choice(EDGES), rng.choice((0, 2, 3)))
    return data


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except RecordsError as e:
        return ("error", str(e), e.offset, e.path)
    except Exception as e:  # anything else is a finding (a RuntimeError: the backends disagree)
        return ("exception", type(e).__name__, str(e))


def columns(module, buf, pos: int, count: int, append):
    n = max(count, 0)
    cols = {name: np.full(n, -7, np.int64) for name in ("offset", "timestamp", "key_offset", "value_offset")}
    cols.update({name: np.full(n, -7, np.int32) for name in ("key_length", "value_length", "header_count", "batch")})
    cols["attributes"] = np.full(n, -7, np.int16)
    module.fill_columns([(buf, pos, len(buf), count, 1000, BASE_TS, append, 3, 0, 0, False, 0, 1, 0)], cols)
    return {k: v.tolist() for k, v in cols.items()}


def summary(module, buf, pos: int, count: int, append):
    return module.summarize(buf, pos, len(buf), count, BASE_TS, append, 0, False, 0)


def batch(section: bytes, count: int) -> bytes:
    """A v2 batch of these record bytes (CRC not set: read with verify_crc=False)."""
    return struct.pack(">qiibIhiqqqhii", 0, 49 + len(section), -1, 2, 0, 0, max(count - 1, 0), BASE_TS, BASE_TS,
                       -1, -1, -1, count) + section


def api_columns(buf):
    c = record_columns(buf, verify_crc=False)
    return [x.tolist() for x in (c.offset, c.timestamp, c.key_length, c.value_length, c.header_count)]


def api_summary(buf):
    return [tuple(record_summary(b)) for b in iter_batches(buf, verify_crc=False)]


def check(rng: random.Random, arena: GuardedArena, compiled: dict) -> "str | None":
    recs = [record(rng) for _ in range(rng.randint(1, 4))]
    data = mutate(rng, bytearray(b"".join(recs)))
    count = len(recs) + rng.choice((0, 0, 0, 0, 1, -1))
    prefix = bytes(rng.randrange(256) for _ in range(rng.choice((0, 0, 1, 7))))
    raw = bytes(prefix + data)
    append = rng.choice((None, None, 77))
    for name, fn in (("summarize", summary), ("fill_columns", columns)):
        want = outcome(fn, _pure, raw, len(prefix), count, append)
        for module in compiled.values():
            got = outcome(fn, module, arena.place(raw), len(prefix), count, append)
            if got != want:
                return f"{name}: {got!r:.300} != reference {want!r:.300}"
    if count >= 0 and not prefix:  # the public path: a batch at the guard, read by the default backend
        whole = batch(bytes(data), count)
        want = outcome(api_columns, whole)
        got = outcome(api_columns, arena.place(whole))
        if got != want or got[0] == "exception":
            return f"record_columns: {got!r:.300} != {want!r:.300}"
        want = outcome(api_summary, whole)
        got = outcome(api_summary, arena.place(whole))
        if got != want or got[0] == "exception":
            return f"record_summary: {got!r:.300} != {want!r:.300}"
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    compiled = {k: v for k, v in available().items() if k != "python"}
    if not compiled:
        print("no compiled record backend: nothing to compare", file=sys.stderr)
        return 2
    arena = GuardedArena(1 << 17)
    deadline, n = time.monotonic() + args.seconds, 0
    cpu = time.process_time()
    while time.monotonic() < deadline:
        case = args.seed * 1_000_003 + n
        rng = random.Random(case)
        failure = check(rng, arena, compiled)
        if failure:
            print(f"FINDING case {case}: {failure}", flush=True)
            return 1
        n += 1
    print(f"seed {args.seed}: {n} inputs, {time.process_time() - cpu:.0f} s CPU, no finding", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
