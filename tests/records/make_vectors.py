"""Re-make tests/records/vectors: real clients' record batches, captured byte for byte.

    .venv/bin/python tests/records/make_vectors.py [--out DIR] [NAME_PREFIX ...]

Each vector is a client producing ``peer_producers.MESSAGES`` (as far as its format can carry them) to
partition 0 of a `CaptureBroker` on 127.0.0.1. ``NAME.bin`` holds the `records` field of every Produce
request, concatenated in order (itself a valid `records` field); ``NAME.json`` says what the client was
asked to produce and how (client and version, configuration, codec, magic, Produce versions). Names given
on the command line re-make only the vectors whose name starts with one of them; ``--out`` writes them
elsewhere than tests/records/vectors.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

import peer_producers as pp
from capture_broker import PRODUCER_ID, CaptureBroker

VECTORS = Path(__file__).resolve().parent / "vectors"
TOPIC = "records-vectors"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
LEGACY = {0: (0, 9), 1: (0, 10, 1)}  # kafka-python's api_version that makes it write magic 0 / 1


def plan() -> list[tuple[str, int, bool, Callable[..., dict[str, Any]], dict[str, Any]]]:
    """(name, magic, idempotent, producer function, its options) of every vector."""
    out: list[tuple[str, int, bool, Callable[..., dict[str, Any]], dict[str, Any]]] = []
    for codec in CODECS:
        out.append((f"confluent-{codec}", 2, False, pp.confluent, {"codec": codec}))
        out.append((f"kafka-python-{codec}", 2, False, pp.kafka_python, {"codec": codec}))
        out.append((f"aiokafka-{codec}", 2, False, pp.aiokafka, {"codec": codec}))
        out.append((f"kafkajs-{codec}", 2, False, pp.kafkajs, {"codec": codec}))
        if codec != "zstd":  # zstd needs magic 2
            for magic, api in LEGACY.items():
                out.append((f"kafka-python-magic{magic}-{codec}", magic, False, pp.kafka_python,
                            {"codec": codec, "api_version": api}))
    out.append(("confluent-idempotent-zstd", 2, True, pp.confluent, {"codec": "zstd"}))
    # small batches: several batches, their base sequences following each other
    out.append(("aiokafka-idempotent-batches", 2, True, pp.aiokafka, {"codec": "none", "max_batch_size": 512}))
    out.append(("kafkajs-idempotent-none", 2, True, pp.kafkajs, {"codec": "none"}))
    return out


def capture(produce: Callable[..., dict[str, Any]], magic: int, idempotent: bool, **options: Any
            ) -> tuple[bytes, dict[str, Any]]:
    """One client run against a fresh CaptureBroker: the records bytes and the vector's description."""
    messages = pp.for_magic(magic, null_headers=produce in (pp.confluent, pp.aiokafka))
    with CaptureBroker() as broker:
        about = produce(broker.bootstrap, TOPIC, messages, **options, **({"idempotent": True} if idempotent else {}))
        produced = [c for c in broker.captured if c.topic == TOPIC]
        records = broker.records(TOPIC)
    if not produced:
        raise RuntimeError(f"{about['client']} sent no Produce request")
    # the listener's port changes with every run: leave it out, so that re-made vectors compare equal
    about["config"] = {k: v for k, v in about["config"].items() if "bootstrap" not in k}
    return records, {**about, "magic": magic, "compression": options["codec"], "idempotent": idempotent,
                     "producer_id": PRODUCER_ID if idempotent else -1,
                     "produce_requests": [{"version": c.produce_version, "acks": c.acks, "bytes": len(c.records)}
                                          for c in produced],
                     "messages": messages}


def main(args: list[str]) -> int:
    out = VECTORS
    if args[:1] == ["--out"] and len(args) > 1:
        out, args = Path(args[1]), args[2:]
    prefixes = args
    out.mkdir(parents=True, exist_ok=True)
    for name, magic, idempotent, produce, options in plan():
        if prefixes and not any(name.startswith(p) for p in prefixes):
            continue
        records, about = capture(produce, magic, idempotent, **options)
        (out / f"{name}.bin").write_bytes(records)
        (out / f"{name}.json").write_text(json.dumps({"name": name, **about}, indent=1) + "\n")
        print(f"{name}: {len(records)} bytes in {len(about['produce_requests'])} Produce request(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
