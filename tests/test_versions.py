"""kcodec.versions: the release table against Kafka's own definitions, and guess_release."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kcodec import definitions
from kcodec.messages import ApiVersionsResponse
from kcodec.versions import distinguishable, guess_release, kraft_only_apis, releases

ROWS = {r.name: r for r in releases()}


def _schemas(folder: Path) -> dict[int, dict]:
    """api key -> the request definition, as Kafka's files spell it (// comments allowed)."""
    out = {}
    for path in folder.glob("*Request.json"):
        raw = json.loads(re.sub(r"^\s*//.*$", "", path.read_text(encoding="utf-8"), flags=re.M))
        if raw.get("type") == "request":
            out[raw["apiKey"]] = raw
    return out


def _advertised(raw: dict) -> tuple[int, int]:
    """The range a broker built from this definition advertises: the latest version is left out
    while it is marked unstable."""
    lo, _, hi = raw["validVersions"].partition("-")
    return int(lo), int(hi or lo) - (1 if raw.get("latestVersionUnstable") else 0)


def test_the_4_3_row_is_kafka_4_3s_definitions(shared):
    schemas = _schemas(shared / "kafka-message-schemas-4.3")
    assert len(schemas) == 52
    checked = 0
    for key, raw in schemas.items():
        if "broker" not in raw.get("listeners", []):
            continue
        lo, hi = _advertised(raw)
        if key == 0:  # Produce: v0-v2 are refused since 4.0, but v0 is still advertised
            lo = 0
        assert ROWS["4.3"].apis.get(key) == (lo, hi), raw["name"]
        checked += 1
    assert checked >= 45


def test_the_3_9_row_is_the_3_9_lines_definitions(shared):
    # ../shared holds trunk of 2024-10 (the 3.9 line, before 4.0 froze): every API a ZooKeeper-mode
    # broker serves has 3.9's range there, or already the one 4.0 shipped.
    schemas = _schemas(shared / "kafka-message-schemas")
    ahead = []
    for key, raw in sorted(schemas.items()):
        if "zkBroker" not in raw.get("listeners", []):
            continue
        lo, hi = _advertised(raw)
        if hi < lo:
            continue  # no stable version yet: not advertised
        row = ROWS["3.9"].apis.get(key)
        if row != (lo, hi):
            assert hi == ROWS["4.0"].apis[key][1], raw["name"]
            ahead.append(raw["name"][:-7])
    assert ahead == ["ListOffsets", "UpdateFeatures"]  # their 4.0 versions were merged by then


def test_kraft_only_apis_are_those_of_the_definitions(shared):
    schemas = _schemas(shared / "kafka-message-schemas")
    want = {k for k, raw in schemas.items()
            if "broker" in raw.get("listeners", []) and "zkBroker" not in raw.get("listeners", [])}
    assert kraft_only_apis() == want


@pytest.mark.parametrize("kip, api, version, release", [
    ("KIP-35", "ApiVersions", 0, "0.10.0"), ("KIP-4", "CreateTopics", 0, "0.10.1"),
    ("KIP-98", "InitProducerId", 0, "0.11"), ("KIP-195", "CreatePartitions", 0, "1.0"),
    ("KIP-464", "CreateTopics", 4, "2.4"), ("KIP-511", "ApiVersions", 3, "2.4"),
    ("KIP-516", "Metadata", 10, "2.8"), ("KIP-700", "DescribeCluster", 0, "2.8"),
    ("KIP-848", "ConsumerGroupHeartbeat", 0, "3.7"), ("KIP-966", "DescribeTopicPartitions", 0, "4.0"),
])
def test_rows_agree_with_the_kips_that_introduced_versions(kip, api, version, release):
    key = definitions.api_key_of(api + "Request")
    first = next(r.name for r in releases() if key in r.apis and r.apis[key][1] >= version)
    assert first == release, kip


def test_every_row_guesses_itself():
    for r in releases():
        guess = guess_release({k: v for k, v in r.apis.items()})
        assert guess.exact and guess.release == r.name and not guess.same_as, r.name


def test_a_kraft_broker_is_recognised():
    # A 3.7 broker in KRaft mode: no ZooKeeper inter-broker APIs, plus DescribeQuorum and friends
    kraft = {k: v for k, v in ROWS["3.7"].apis.items() if k not in (4, 5, 6, 7)}
    kraft.update({55: (0, 1), 64: (0, 0), 75: (0, 0)})
    assert str(guess_release(kraft)) == "3.7"


def test_guess_from_an_api_versions_response_and_its_limits():
    resp = ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                                        for k, (lo, hi) in ROWS["2.8"].apis.items()])
    assert str(guess_release(resp)) == "2.8"
    # only the admin APIs: releases that left them alone look alike
    admin = {k: ROWS["3.1"].apis[k] for k in (3, 18, 19, 20, 37)}
    guess = guess_release(admin)
    assert guess.exact and guess.release == "3.1"
    assert guess.same_as == ["3.2", "3.3", "3.4", "3.5", "3.6", "3.7", "3.8"]
    assert str(guess) == "3.1 (or 3.2, 3.3, 3.4, 3.5, 3.6, 3.7, 3.8: same API ranges)"
    newer = {**ROWS["4.3"].apis, 0: (0, 14)}
    assert str(guess_release(newer)) == "newer than 4.3"
    odd = {**ROWS["3.5"].apis, 12: (0, 9)}  # a Heartbeat version no release has
    guess = guess_release(odd)
    assert not guess.exact and guess.release == "3.5" and guess.at_least is None
    assert guess.differences == ["Heartbeat max v9, 3.5 has v4"]
    # configured-only APIs (client telemetry), kcodec's ListTopics: left out of the comparison
    extra = {**ROWS["4.1"].apis, 71: (0, 0), 72: (0, 0), definitions.list_topics_api_key(): (0, 1)}
    assert str(guess_release(extra)) == "4.1"


def test_which_releases_can_be_told_apart():
    assert all(len(group) == 1 for group in distinguishable())  # ZooKeeper-mode brokers: every one
    assert [g for g in distinguishable(kraft=True) if len(g) > 1] == [["3.3", "3.4"]]


@pytest.mark.parametrize("bad", [None, 42, {"x": (0, 1)}, {1: 5}, {1: (0,)}, [(1, 2)]])
def test_what_is_not_an_api_versions_answer_is_refused_clearly(bad):
    with pytest.raises(TypeError, match=r"expected an ApiVersionsResponse or \{api_key: \(min, max\)\}"):
        guess_release(bad)


def test_an_answer_without_kafka_apis_names_no_release():
    for nothing in ({}, ApiVersionsResponse(error_code=35), {5000: (0, 3)}):
        guess = guess_release(nothing)
        assert guess.release == "" and not guess.exact
        assert str(guess) == "unknown: no API of an Apache Kafka release advertised"
