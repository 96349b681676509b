"""Decode and encode times of the same bytes with other Python codecs, when they are installed:
kio (Python 3.11+) and kafka-python. Each peer's re-encoding is checked against the bytes it decoded."""

from __future__ import annotations

import io
from typing import Any, Callable, Optional, Sequence

from kcodec.sizes.timing import Payload, best_time

# kcodec message names -> kafka-python modules that define them
_KP_MODULES = ("kafka.protocol.metadata", "kafka.protocol.admin")


def _kio(p: Payload) -> Optional[tuple[Callable[[bytes], Any], Callable[[Any], bytes]]]:
    try:
        import kio.index
        import kio.serial
    except ImportError:
        return None
    import kcodec

    cls: Any = kcodec.message_class(name=p.class_name)
    load = kio.index.load_request_schema if cls.KIND == "request" else kio.index.load_response_schema
    try:
        schema = load(cls.API_KEY, p.version)
    except Exception:  # kio does not know this api or version (ListTopics is kcodec's own)
        return None
    reader, writer = kio.serial.entity_reader(schema), kio.serial.entity_writer(schema)

    def encode(entity: Any) -> bytes:
        buf = io.BytesIO()
        writer(buf, entity)
        return buf.getvalue()

    return (lambda data: reader(memoryview(data), 0)[0]), encode


def _kafka_python(p: Payload) -> Optional[tuple[Callable[[bytes], Any], Callable[[Any], bytes]]]:
    import importlib

    cls = None
    for name in _KP_MODULES:
        try:
            cls = getattr(importlib.import_module(name), p.class_name, None)
        except ImportError:
            return None
        if cls is not None:
            break
    if cls is None or not cls.min_version <= p.version <= cls.max_version:
        return None
    version = p.version

    def decode(data: bytes) -> Any:
        obj = cls.decode(io.BytesIO(data), version=version)
        obj._header = None  # a decoded body has no header; encode() looks for one
        return obj

    return decode, (lambda obj: bytes(obj.encode(version=version)))


PEERS: dict[str, Callable[[Payload], Optional[tuple[Callable[[bytes], Any], Callable[[Any], bytes]]]]] = {
    "kio": _kio,
    "kafka-python": _kafka_python,
}


def peer_versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for peer, dist in (("kio", "kio"), ("kafka-python", "kafka-python")):
        try:
            out[peer] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def time_peers(payloads: Sequence[Payload], repeat: int = 3) -> tuple[dict[str, dict[str, dict[str, float]]],
                                                                      list[str]]:
    """``({peer: {label: {"decode": s, "encode": s}}}, notes)``: what each installed peer can decode."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    notes = []
    for peer, make in PEERS.items():
        for p in payloads:
            try:
                codec = make(p)
            except ImportError:
                codec = None
            if codec is None:
                continue
            decode, encode = codec
            try:
                objs = [decode(b) for b in p.bodies]
                same = [encode(o) for o in objs] == list(p.bodies)
            except Exception as e:  # a peer's own failure is a finding, not a crash of the showcase
                notes.append(f"{peer} cannot decode {p.label}: {type(e).__name__}: {e}")
                continue
            if not same:
                notes.append(f"{peer} re-encodes {p.label} differently; its times are left out")
                continue
            out.setdefault(peer, {})[p.label] = {
                "decode": best_time(lambda: [decode(b) for b in p.bodies], repeat),
                "encode": best_time(lambda: [encode(o) for o in objs], repeat),
            }
    return out, notes
