"""`kcodec tap`: a recording TCP proxy between Kafka clients and a broker, and the capture readers.

    kcodec tap --listen 127.0.0.1:19092 --upstream broker:9092 --out captures/

``capture`` holds the ``.kcap`` format (documented there), ``proxy`` the proxy, ``rewrite`` the broker
address rewriting, ``pcap`` the pcap/pcapng reader with TCP reassembly, ``frames`` one reader for both.
"""

from __future__ import annotations

import argparse
from typing import Any


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--listen", type=_host_port, default=("127.0.0.1", 19092),
                   help="HOST:PORT of the bootstrap listener (port 0: any free port)")
    p.add_argument("--upstream", type=_host_port, required=True,
                   help="HOST:PORT of the bootstrap broker: a PLAINTEXT or SASL_PLAINTEXT listener (no TLS)")
    p.add_argument("--out", required=True, help="directory for the capture files")
    p.add_argument("--advertise", help="host given to clients in rewritten responses (default: the listen host)")
    p.add_argument("--max-file-mb", type=float, default=64.0, help="start a new capture file past this size")
    p.add_argument("--buffer-mb", type=float, default=32.0, help="frames held in memory before connections wait")
    p.add_argument("--drain-seconds", type=float, default=2.0,
                   help="how long answers to a departed client's requests are still awaited and recorded")


def run(args: Any) -> int:
    import asyncio
    import signal
    import sys
    from pathlib import Path

    from .proxy import Tap

    async def main() -> None:
        tap = Tap(args.listen, args.upstream, Path(args.out), advertise=args.advertise,
                  max_file_bytes=int(args.max_file_mb * 1024 * 1024),
                  buffer_bytes=int(args.buffer_mb * 1024 * 1024), drain_timeout=max(0.0, args.drain_seconds))
        await tap.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        print(f"listening on {args.listen[0]}:{tap.port}, upstream {args.upstream[0]}:{args.upstream[1]}, "
              f"capturing to {args.out} (session {tap.session})", flush=True)
        await stop.wait()
        await tap.close()
        print(f"stopped: {tap.connections} connections, {tap.frames} frames, "
              f"{tap.writer.records} records in {len(tap.writer.files)} files", flush=True)

    try:
        asyncio.run(main())
    except OSError as e:
        print(f"kcodec tap: {e}", file=sys.stderr)
        return 1
    return 0
