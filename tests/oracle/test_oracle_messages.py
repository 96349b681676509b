"""kcodec against Apache Kafka's own message classes, byte for byte, for every message kcodec defines at
every version Kafka's classes have (4.4's, and 3.9's for the versions Kafka 4.0 removed), on both backends.

For each instance (the strategies' deterministic ones and the hand-made extremes of extremes.py):
1. Kafka's classes encode it (from Kafka's JSON) and both kcodec backends encode it: the same bytes;
2. both backends decode Kafka's bytes to the instance;
3. Kafka reads kcodec's bytes (unknown tagged fields included) to the instance, consuming every byte, and
   writes it again exactly as kcodec re-encodes what it decoded (Kafka keeps unknown tagged fields too).
Unknown tagged fields are not in Kafka's JSON, so step 1 encodes the instance without them.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
import tally
from extremes import KINDS, extreme
from hypothesis import HealthCheck, Phase, given, settings
from kafka_json import from_kafka, kafka_class, renames, to_kafka
from needs import need_extension

import kcodec
from kcodec import definitions
from kcodec.core.backend import available
from kcodec.convert import UNKNOWN_TAGS_KEY
from kcodec.core.ir import program_for
from kcodec.testing import instances

pytestmark = pytest.mark.oracle

BACKENDS = available()
need_extension(BACKENDS.get("cython"), "the Cython backend kcodec.core._fast (built by pip install when a C compiler is there)")

# kcodec messages no Kafka class stands for, with the reason (reviewed).
NOT_IN_KAFKA = {
    "ListTopicsRequest": "KIP-142's ListTopics was never adopted by Apache Kafka: kcodec's own overlay",
    "ListTopicsResponse": "KIP-142's ListTopics was never adopted by Apache Kafka: kcodec's own overlay",
}
NAMES = [n for n in definitions.names() if n not in NOT_IN_KAFKA]
# Random instances per message-version, beside the four extremes (settings.default is the ci profile: 15).
RANDOM = max(4, settings().max_examples // 2)


def drawn(cls: type, version: int, n: int) -> list[Any]:
    """n instances from kcodec's strategy, the same ones every run (derandomized, no database)."""
    out: list[Any] = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(instances(cls, version))
    def collect(msg: Any) -> None:
        out.append(msg)

    collect()
    return out


def without_unknown_tags(msg: Any, version: int) -> Any:
    """A copy of the instance with no unknown tagged fields at any depth (Kafka's JSON cannot carry them)."""
    prog = program_for(type(msg), version)
    copy = kcodec.decode(type(msg), kcodec.encode(msg, version), version)

    def strip(obj: Any, index: int) -> None:
        if obj.unknown_tagged_fields is not None:
            obj.unknown_tagged_fields = None
        sp = prog.structs[index]
        for op in sp.fields + sp.tagged:
            value = getattr(obj, op.attr) if op.struct >= 0 else None
            for element in (value if op.array else [value]) if value is not None else ():
                strip(element, op.struct)

    strip(copy, 0)
    return copy


def cases_of(name: str, oracle: Any) -> dict[str, list[tuple[int, str, Any]]]:
    """(version, label, instance) of every version of ``name``, grouped by the Kafka line that checks them."""
    cls = kcodec.message_class(name=name)
    by_line: dict[str, list[tuple[int, str, Any]]] = {}
    for v in definitions.get(name).versions:
        line = oracle.line_for(kafka_class(name), v)
        assert line is not None, f"{name} v{v}: in no Kafka line (test_oracle_coverage accounts for these)"
        cases = [(v, kind, extreme(cls, v, kind)) for kind in KINDS]
        cases += [(v, f"drawn[{i}]", m) for i, m in enumerate(drawn(cls, v, RANDOM))]
        by_line.setdefault(line, []).extend(cases)
    return by_line


@pytest.mark.parametrize("name", NAMES)
def test_kafka_and_kcodec_agree(name: str, oracle: Any) -> None:
    cls = kcodec.message_class(name=name)
    jcls = kafka_class(name)
    wrong: list[str] = []
    for line, cases in cases_of(name, oracle).items():
        jvm = oracle.jvms[line]
        names = renames(name, line)
        plain = [without_unknown_tags(m, v) for v, _, m in cases]
        encoded = jvm.call("encode", cases=[{"cls": jcls, "v": v, "json": to_kafka(p, v, names=names)}
                                            for (v, _, _), p in zip(cases, plain)])["results"]
        ours = [kcodec.encode(m, v) for v, _, m in cases]
        read = jvm.call("read", cases=[{"cls": jcls, "v": v, "bytes": base64.b64encode(b).decode()}
                                       for (v, _, _), b in zip(cases, ours)])["results"]
        for (v, label, msg), p, enc, back, data in zip(cases, plain, encoded, read, ours):
            where = f"{name} v{v} {label} (Kafka {line})"
            wrong += _compare_encoded(cls, v, p, enc, where)
            wrong += _compare_read(cls, v, p, data, back, names, where)
        tally.count(f"message-versions checked against Kafka {line}", len({v for v, _, _ in cases}))
        tally.count("instances", len(cases))
    assert not wrong, f"{len(wrong)} disagreements with Kafka:\n" + "\n".join(wrong[:12])


def _compare_encoded(cls: type, v: int, plain: Any, enc: dict, where: str) -> list[str]:
    """Kafka's bytes of the instance: the same from both backends, and decoded by both to the instance."""
    if "error" in enc:
        return [f"{where}: Kafka could not encode it: {enc['error']}"]
    theirs = base64.b64decode(enc["bytes"])
    prog = program_for(cls, v)
    wrong = []
    for backend_name, backend in BACKENDS.items():
        ours = backend.encode(prog, plain)
        if ours != theirs:
            wrong.append(f"{where}: {backend_name} encodes\n    {_hex(ours)}\n  Kafka encodes\n    {_hex(theirs)}")
        try:
            decoded, end = backend.decode(prog, theirs, 0, None, False)
        except kcodec.DecodeError as e:
            wrong.append(f"{where}: {backend_name} cannot decode Kafka's bytes: {e}")
            continue
        if end != len(theirs) or decoded != plain:
            wrong.append(f"{where}: {backend_name} decodes Kafka's bytes (to byte {end} of {len(theirs)}) to "
                         f"{_short(decoded)}\n  not {_short(plain)}")
    return wrong


def _compare_read(cls: type, v: int, plain: Any, data: bytes, back: dict, names: dict[str, str],
                  where: str) -> list[str]:
    """What Kafka read from kcodec's bytes: the instance, every byte used; its re-encoding kcodec's round trip."""
    if "error" in back:
        return [f"{where}: Kafka cannot read kcodec's bytes {_hex(data)}: {back['error']}"]
    wrong = []
    if back["left"]:
        wrong.append(f"{where}: Kafka left {back['left']} of kcodec's {len(data)} bytes unread")
    seen = to_kafka(from_kafka(cls, back["json"], v, names), v, records=False)
    expected = to_kafka(plain, v, records=False)
    if seen != expected:
        wrong.append(f"{where}: Kafka reads kcodec's bytes as\n    {_short(back['json'])}\n  not {_short(expected)}")
    prog = program_for(cls, v)
    again = base64.b64decode(back["bytes"])
    for backend_name, backend in BACKENDS.items():
        ours = backend.encode(prog, backend.decode(prog, data, 0, None, False)[0])
        if ours != again:
            wrong.append(f"{where}: Kafka re-encodes kcodec's bytes as\n    {_hex(again)}\n  {backend_name}'s "
                         f"round trip gives\n    {_hex(ours)}")
    return wrong


def _hex(data: bytes) -> str:
    text = data.hex()
    return text if len(text) <= 400 else f"{text[:300]}...{text[-80:]} ({len(data)} bytes)"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 600 else f"{text[:500]}... ({len(text)} characters)"
