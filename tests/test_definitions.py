"""kcodec's definitions: derived from ../shared, facts only, validated by Kafka's generator rules."""

from __future__ import annotations

import copy
import json

import pytest

from kcodec import definitions
from kcodec.definitions import derive, snake_case
from kcodec.definitions.validate import DefinitionError, parse_int_default, validate_message
from kcodec.messages import _generate


def test_shipped_definitions_are_what_the_script_makes(shared):
    made = derive.render(derive.derive(shared))
    shipped = derive.OUTPUT.read_text(encoding="utf-8")
    assert made == shipped, "run: python -m kcodec.definitions.derive"


def test_generated_sources_are_fresh():
    stale = [str(p) for p, text in _generate.outputs().items()
             if not p.exists() or p.read_text(encoding="utf-8") != text]
    assert not stale, "run: python -m kcodec.messages._generate"


def test_generated_files_are_marked():
    for path in _generate.outputs():
        assert path.read_text(encoding="utf-8").startswith(_generate.HEADER)
    assert json.loads(derive.OUTPUT.read_text())["generated"].startswith("by kcodec/definitions/derive.py")


def test_no_prose_ships():
    text = derive.OUTPUT.read_text(encoding="utf-8")
    assert '"about"' not in text
    assert "//" not in text
    assert "The duration in milliseconds" not in text  # a common "about" text of Kafka's


def _field(message: str, path: str):
    fields = definitions.get(message).root.fields
    for part in path.split("."):
        f = {f.name: f for f in fields}[part]
        fields = f.struct.fields if f.struct is not None else []
    return f


def test_union_of_versions_and_fields(shared):
    # 4.3 adds versions; the 3.9 line keeps the old ones and the fields only they had.
    meta = definitions.get("MetadataResponse")
    assert (meta.valid.lo, meta.valid.hi) == (0, 13)
    assert str(_field("ListOffsetsRequest", "Topics.Partitions.MaxNumOffsets").versions) == "0"
    assert str(_field("ListOffsetsRequest", "Topics.Partitions.Timestamp").versions) == "0+"
    assert str(_field("DescribeConfigsResponse", "Results.Configs.IsDefault").versions) == "0"
    assert str(_field("OffsetCommitRequest", "Topics.Partitions.CommitTimestamp").versions) == "1"
    # a renamed API keeps its api key and names its former name
    lcr = definitions.get("ListConfigResourcesRequest")
    assert lcr.api_key == 74 and lcr.raw["formerNames"] == ["ListClientMetricsResourcesRequest"]
    # every API of both sets is there, with the newest range
    assert definitions.get("ProduceRequest").valid.hi >= 12
    assert definitions.by_api_key(3, "response") == "MetadataResponse"


def test_corrections_take_the_place_of_unstable_versions():
    # Kafka 4.0 added LeaderEpoch to ReadShareGroupStateSummaryResponse v0, unstable in the 3.9 line (tests/oracle)
    assert [f.name for f in _field("ReadShareGroupStateSummaryResponse", "Results.Partitions").struct.fields] == [
        "Partition", "ErrorCode", "ErrorMessage", "StateEpoch", "LeaderEpoch", "StartOffset"]
    assert str(_field("ReadShareGroupStateSummaryResponse", "Results.Partitions.LeaderEpoch").versions) == "0+"


def test_every_message_validates():
    for name in definitions.names():
        definitions.get(name)  # validates on load


def test_snake_case():
    assert snake_case("ThrottleTimeMs") == "throttle_time_ms"
    assert snake_case("IsrNodes") == "isr_nodes"
    assert snake_case("TopicId") == "topic_id"
    assert snake_case("ACLOperation") == "acl_operation"


def test_int_defaults():
    assert parse_int_default("-1", "int32") == -1
    assert parse_int_default("0x7fffffff", "int32") == 0x7FFFFFFF
    assert parse_int_default("-2147483648", "int32") == -(1 << 31)
    assert parse_int_default("0xff", "uint16") == 255
    with pytest.raises(ValueError):
        parse_int_default("128", "int8")
    with pytest.raises(ValueError):
        parse_int_default("-1", "uint32")


BASE = {"name": "TestRequest", "type": "request", "apiKey": 999, "validVersions": "0-3", "flexibleVersions": "2+",
        "fields": [
            {"name": "A", "type": "int32", "versions": "0+"},
            {"name": "B", "type": "string", "versions": "1+", "nullableVersions": "1+", "default": "null"},
            {"name": "T0", "type": "int8", "versions": "2+", "taggedVersions": "2+", "tag": 0},
            {"name": "T1", "type": "[]int32", "versions": "2+", "taggedVersions": "2+", "tag": 1},
        ]}


def _broken(mutate):
    m = copy.deepcopy(BASE)
    mutate(m)
    return m


def test_base_fixture_is_valid():
    validate_message(BASE)


@pytest.mark.parametrize("mutate,words", [
    (lambda m: m["fields"][3].update(tag=2), "contiguous"),
    (lambda m: m["fields"][3].update(tag=0), "contiguous"),
    (lambda m: m["fields"][2].update(taggedVersions="2-3"), "open-ended"),
    (lambda m: m.update(flexibleVersions="2-3"), "open-ended"),
    (lambda m: m["fields"][2].update(taggedVersions="1+", versions="1+"), "flexible"),
    (lambda m: m["fields"][0].update(nullableVersions="0+"), "cannot be nullable"),
    (lambda m: m["fields"][1].update(nullableVersions="2+"), "default null"),
    (lambda m: m["fields"][0].update(default="2147483648"), "does not fit"),
    (lambda m: m["fields"].append({"name": "C", "type": "bool", "versions": "0+", "default": "yes"}), "bool"),
    (lambda m: m["fields"].append({"name": "D", "type": "[]int32", "versions": "0+", "default": "x"}), "null"),
    (lambda m: m["fields"].append({"name": "A", "type": "int8", "versions": "0+"}), "duplicate"),
    (lambda m: m["fields"].append({"name": "E", "type": "Nope", "versions": "0+"}), "unknown type"),
    (lambda m: m["fields"][2].pop("tag"), "go together"),
])
def test_generator_rules_reject(mutate, words):
    with pytest.raises(DefinitionError, match=words):
        validate_message(_broken(mutate))
