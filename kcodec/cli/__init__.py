"""The ``kcodec`` command.

    kcodec showcase [--out DIR] [--steps ...]       the main job (kcodec/showcase): sizes, codec times, a report
    kcodec sizes --topics 10,100,1k,10k,100k ...     response sizes from 10 to 100,000 topics (kcodec/sizes)
    kcodec decode FILE|- [--hex] [--response --api-key K --api-version V] [--lenient]   a frame as JSON
    kcodec apis                                      every API and the versions kcodec speaks
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Optional

import kcodec
from kcodec import definitions


def read_frame(source: str, hex_text: bool) -> bytes:
    """The frame's bytes from a file, or from standard input for ``-``; ``hex_text``: hex digits, any
    whitespace between them (a frame copied from a log or a packet dump)."""
    data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    return bytes.fromhex(data.decode("ascii")) if hex_text else data


def decode_file(source: str, response: bool, api_key: Optional[int], api_version: Optional[int],
                strict: bool, hex_text: bool = False) -> int:
    try:
        frame = read_frame(source, hex_text)
    except OSError as e:
        print(f"error: cannot read {source}: {e.strerror or e}", file=sys.stderr)
        return 2
    except ValueError as e:  # not ascii, or not hex digits
        print(f"error: {source} is not hex text ({e})", file=sys.stderr)
        return 2
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
# `kcodec broker` is the distribution kcodec-broker's command (kcodec_broker.cli, also `kcodec-broker`), loaded
# only when that command is run or listed, and only if installed (REACHES_THE_BROKER in tests/test_layers.py).
BROKER_MODULE = "kcodec_broker.cli"
BROKER_MISSING = "kcodec broker needs kcodec-broker, the broker's own distribution: pip install kcodec-broker"
APPLICATIONS: list[tuple[str, str, str]] = [
    ("topics", "kcodec.client.cli", "list, describe, create, delete topics, add partitions; describe the cluster"),
    ("showcase", "kcodec.showcase", "the main job: sizes and codec times at 1,000 topics, a report folder"),
    ("sizes", "kcodec.sizes.cli", "bytes and decode times of Metadata vs ListTopics vs DescribeTopicPartitions"),
    ("broker", BROKER_MODULE,
     "an in-process Kafka cluster: topics, produce and fetch, groups, transactions, SASL, TLS, ACLs"),
    ("tap", "kcodec.tap", "record Kafka traffic through a proxy into capture files"),
    ("analyze", "kcodec.spark.analyze", "decode captures on Spark into tables and a report"),
]


def main(argv: Optional[list[str]] = None) -> int:
    import importlib
    import importlib.util

    parser = argparse.ArgumentParser(prog="kcodec", description="Kafka wire-protocol codec")
    sub = parser.add_subparsers(dest="command", required=True)
    # Import only the application being run (none for decode and apis, all for --help): one may need
    # to act before the others load kcodec's definitions (kcodec broker --list-topics-api-key).
    args_list = sys.argv[1:] if argv is None else argv
    command = next((a for a in args_list if not a.startswith("-")), None)
    builtin = command in ("decode", "apis")
    chosen = {name for name, _, _ in APPLICATIONS} & {command}
    broker_missing = not builtin and importlib.util.find_spec(BROKER_MODULE.partition(".")[0]) is None
    if broker_missing and command == "broker":
        print(BROKER_MISSING, file=sys.stderr)
        return 2
    apps = {}
    for name, module, help_text in APPLICATIONS:
        missing = module == BROKER_MODULE and broker_missing
        p = sub.add_parser(name, help=help_text + (" (not installed: pip install kcodec-broker)" if missing else ""))
        if not builtin and (not chosen or name in chosen) and not missing:
            apps[name] = importlib.import_module(module)
            apps[name].add_arguments(p)
    p = sub.add_parser("decode", help="decode a request (or response) frame file to JSON")
    p.add_argument("file", help="a whole frame, its 4-byte size included; - reads standard input")
    p.add_argument("--hex", action="store_true", help="the input is hex text (whitespace allowed)")
    p.add_argument("--response", action="store_true",
                   help="a response frame: its api key and version are not in it, so give both")
    p.add_argument("--api-key", type=int, help="the request's api key (with --response)")
    p.add_argument("--api-version", type=int, help="the request's api version (with --response)")
    p.add_argument("--lenient", action="store_true", help="tolerate trailing bytes")
    sub.add_parser("apis", help="list every API and its versions")
    args = parser.parse_args(args_list)
    if args.command in apps:
        return int(apps[args.command].run(args))
    if args.command == "decode":
        import warnings

        warnings.simplefilter("always")
        return decode_file(args.file, args.response, args.api_key, args.api_version, not args.lenient, args.hex)
    return apis()


if __name__ == "__main__":
    sys.exit(main())
