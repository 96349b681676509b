"""Decode and encode times of the same bytes with other Python codecs, when they are installed:
kio (Python 3.11+) and kafka-python. Each peer's re-encoding is checked against the bytes it decoded."""

from __future__ import annotations

import io
from typing import Any, Callable, Optional, Sequence

from kcodec.sizes.timing import Payload, interleaved

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


def _kcodec(p: Payload) -> tuple[Callable[[bytes], Any], Callable[[Any], bytes]]:
    import kcodec

    cls: Any = kcodec.message_class(name=p.class_name)
    return (lambda data: kcodec.decode(cls, data, p.version)), (lambda obj: kcodec.encode(obj, p.version))


def time_codecs(payloads: Sequence[Payload], rounds: int = 5) -> tuple[dict[str, dict[str, dict[str, float]]],
                                                                       list[str]]:
    """``({codec: {label: {"decode": s, "encode": s}}}, notes)``: kcodec (this process's backend, public
    API) beside every installed peer that can decode the payload, in interleaved rounds; each figure is
    the median of a call plus dropping its result (kcodec.sizes.timing.interleaved)."""
    import kcodec

    codecs: dict[str, Callable[[Payload], Optional[tuple[Callable[[bytes], Any], Callable[[Any], bytes]]]]] = {
        f"kcodec ({kcodec.BACKEND})": _kcodec, **PEERS}
    out: dict[str, dict[str, dict[str, float]]] = {}
    notes = []
    for p in payloads:
        decoders, encoders = {}, {}
        for name, make in codecs.items():
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
                notes.append(f"{name} cannot decode {p.label}: {type(e).__name__}: {e}")
                continue
            if not same:
                notes.append(f"{name} re-encodes {p.label} differently; its times are left out")
                continue
            decoders[name] = lambda d=decode: [d(b) for b in p.bodies]
            encoders[name] = lambda e=encode, objs=objs: [e(o) for o in objs]
        dec, enc = interleaved(decoders, rounds), interleaved(encoders, rounds)
        for name in decoders:
            out.setdefault(name, {})[p.label] = {"decode": dec[name].total, "encode": enc[name].total}
    return out, notes
