"""The ``kcodec`` command.

    kcodec showcase [--vectors DIR] [--repeat N]   decode and re-encode the 1,000-topic Metadata payloads
    kcodec decode FILE [--response --api-key K --api-version V] [--strict]   a frame as JSON
    kcodec apis                                      every API and the versions kcodec speaks
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

import kcodec
from kcodec import definitions


def _default_vectors() -> Path:
    env = os.environ.get("KCODEC_SHARED")
    shared = Path(env) if env else Path(__file__).resolve().parents[2] / "shared"
    return shared / "vectors" / "metadata"


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def showcase(vectors: Path, repeat: int, out: Any = sys.stdout) -> int:
    from kcodec.messages import MetadataResponse

    print(f"kcodec {kcodec.__version__}, backend: {kcodec.BACKEND}", file=out)
    print(f"payloads: {vectors}", file=out)
    rows = []
    for version in (1, 12):
        path = vectors / f"metadata_v{version}_1k_body.bin"
        if not path.exists():
            print(f"missing {path}: pass --vectors DIR (../shared/vectors/metadata)", file=sys.stderr)
            return 2
        data = path.read_bytes()
        t_dec, msg = _best(lambda: kcodec.decode(MetadataResponse, data, version), repeat)
        t_enc, again = _best(lambda: kcodec.encode(msg, version), repeat)
        t_size, size = _best(lambda: kcodec.encoded_size(msg, version), repeat)
        if again != data or size != len(data):
            print(f"v{version}: re-encoding differs from the payload", file=sys.stderr)
            return 1
        parts = sum(len(t.partitions) for t in msg.topics)
        rows.append((f"Metadata v{version}", len(data), len(msg.topics), parts, t_dec, t_enc, t_size))
    head = f"{'payload':<14} {'bytes':>8} {'topics':>7} {'partitions':>10} {'decode ms':>10} {'encode ms':>10} {'size ms':>8}"
    print(head, file=out)
    print("-" * len(head), file=out)
    for name, n, topics, parts, d, e, s in rows:
        print(f"{name:<14} {n:>8} {topics:>7} {parts:>10} {d * 1e3:>10.2f} {e * 1e3:>10.2f} {s * 1e3:>8.2f}", file=out)
    print(f"(best of {repeat}; every payload re-encoded byte for byte)", file=out)
    return 0


def decode_file(path: Path, response: bool, api_key: Optional[int], api_version: Optional[int],
                strict: bool) -> int:
    frame = path.read_bytes()
    try:
        if response:
            if api_key is None or api_version is None:
                print("a response needs --api-key and --api-version", file=sys.stderr)
                return 2
            header, msg = kcodec.decode_response(frame, api_key, api_version, strict=strict)
        else:
            header, msg = kcodec.decode_request(frame, strict=strict)
    except kcodec.KcodecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"header": kcodec.to_dict(header), "type": type(msg).__name__, "body": kcodec.to_dict(msg)},
                     indent=2))
    return 0


def apis(out: Any = sys.stdout) -> int:
    for key, name in sorted(definitions.api_keys().items()):
        mdef = definitions.get(definitions.by_api_key(key, "request"))
        flex = f", flexible from v{mdef.flexible.lo}" if not mdef.flexible.empty else ""
        print(f"{key:>5}  {name:<36} v{mdef.valid.lo}-v{mdef.valid.hi}{flex}", file=out)
    return 0


# Application commands: (name, module, help). The module defines `add_arguments(parser)` and
# `run(args) -> int`, and imports its heavy dependencies inside `run` so `kcodec --help` stays fast.
APPLICATIONS: list[tuple[str, str, str]] = [
    ("tap", "kcodec.tap", "record Kafka traffic through a proxy into capture files"),
    ("analyze", "kcodec.spark.analyze", "decode captures on Spark into tables and a report"),
]


def main(argv: Optional[list[str]] = None) -> int:
    import importlib

    parser = argparse.ArgumentParser(prog="kcodec", description="Kafka wire-protocol codec")
    sub = parser.add_subparsers(dest="command", required=True)
    apps = {}
    for name, module, help_text in APPLICATIONS:
        apps[name] = importlib.import_module(module)
        apps[name].add_arguments(sub.add_parser(name, help=help_text))
    p = sub.add_parser("showcase", help="decode and re-encode the 1,000-topic Metadata payloads, with times")
    p.add_argument("--vectors", type=Path, default=_default_vectors())
    p.add_argument("--repeat", type=int, default=5)
    p = sub.add_parser("decode", help="decode a request (or response) frame file to JSON")
    p.add_argument("file", type=Path)
    p.add_argument("--response", action="store_true")
    p.add_argument("--api-key", type=int)
    p.add_argument("--api-version", type=int)
    p.add_argument("--lenient", action="store_true", help="tolerate trailing bytes")
    sub.add_parser("apis", help="list every API and its versions")
    args = parser.parse_args(argv)
    if args.command in apps:
        return int(apps[args.command].run(args))
    if args.command == "showcase":
        return showcase(args.vectors, max(1, args.repeat))
    if args.command == "decode":
        import warnings

        warnings.simplefilter("always")
        return decode_file(args.file, args.response, args.api_key, args.api_version, not args.lenient)
    return apis()


if __name__ == "__main__":
    sys.exit(main())
