"""What the Java oracle covers, accounted for: every (message, version) that Kafka 4.4's or 3.9's classes
have and every one kcodec has. A kcodec version Kafka's classes lack, or a Kafka version kcodec lacks, must
be in a reviewed list below with its reason: nothing is skipped silently. When kcodec's definitions grow
(a newer ../shared), the lists shrink and this test says so.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_oracle_messages import NOT_IN_KAFKA

from kcodec import definitions

pytestmark = pytest.mark.oracle

# The schemas of ../shared's 4.3 set are the 52 APIs kafka-python ships (its PROVENANCE.md); kcodec takes the
# other APIs from the 3.9 line, so their 4.x versions are missing, as are versions new in 4.4.
IN_4_4 = "new in Kafka 4.4, after the 4.3 set in ../shared"
NOT_IN_4_3_SET = "a Kafka 4.x version of an API that ../shared's 4.3 set lacks (kcodec has the API's 3.9 versions)"
NEW_API = "an API Kafka added after 3.9 that ../shared's 4.3 set lacks"

# Kafka's message (kcodec's name, or Kafka's for messages kcodec lacks) -> (versions, why kcodec lacks them).
NOT_IN_KCODEC: dict[str, tuple[list[int], str]] = {
    **{f"ApiVersions{k}": ([5], IN_4_4 + " (KIP-1242: ClusterId and NodeId checks)") for k in ("Request", "Response")},
    **{f"DeleteGroups{k}": ([3], IN_4_4 + " (an ErrorMessage per group)") for k in ("Request", "Response")},
    **{f"TxnOffsetCommit{k}": ([6], IN_4_4 + " (KIP-1319: topic ids)") for k in ("Request", "Response")},
    **{f"AddRaftVoter{k}": ([1], NOT_IN_4_3_SET + ": AckWhenCommitted") for k in ("Request", "Response")},
    **{f"BrokerHeartbeat{k}": ([2], NOT_IN_4_3_SET + ": CordonedLogDirs") for k in ("Request", "Response")},
    **{f"ConsumerGroupDescribe{k}": ([1], NOT_IN_4_3_SET + " (KIP-1099: MemberType)") for k in ("Request", "Response")},
    **{f"Vote{k}": ([2], NOT_IN_4_3_SET + " (KIP-996: pre-vote)") for k in ("Request", "Response")},
    **{f"{api}{k}": ([1], NOT_IN_4_3_SET + " (KIP-1226: DeliveryCompleteCount)")
       for api in ("ReadShareGroupStateSummary", "WriteShareGroupState") for k in ("Request", "Response")},
    # KIP-932's share groups: the 3.9 line has only their early version 0, which Kafka 4.x dropped
    **{f"{api}{k}": ([1, 2], NOT_IN_4_3_SET + " (KIP-932's share groups; 2: KIP-1206, KIP-1222)")
       for api in ("ShareFetch", "ShareAcknowledge") for k in ("Request", "Response")},
    **{f"{api}{k}": ([1], NOT_IN_4_3_SET + " (KIP-932's share groups)")
       for api in ("ShareGroupHeartbeat", "ShareGroupDescribe") for k in ("Request", "Response")},
    **{f"{api}{k}": (vs, NEW_API + " (KIP-932's share group offsets admin)")
       for api, vs in (("AlterShareGroupOffsets", [0]), ("DeleteShareGroupOffsets", [0]),
                       ("DescribeShareGroupOffsets", [0, 1])) for k in ("Request", "Response")},
    **{f"{api}{k}": (vs, NEW_API + " (KIP-1071's streams groups)")
       for api, vs in (("StreamsGroupHeartbeat", [0, 1]), ("StreamsGroupDescribe", [0, 1]),
                       ("StreamsGroupTopologyDescriptionUpdate", [0])) for k in ("Request", "Response")},
    **{f"UnregisterController{k}": ([0], NEW_API + " (a KRaft controller leaving the quorum)")
       for k in ("Request", "Response")},
    "AbortedTxn": ([0], "a data schema of Kafka 4.x's transaction index files, not a wire message; not in ../shared"),
}


def _kcodec_name(schema: dict[str, Any]) -> str:
    """kcodec's name for one of Kafka's schemas (by api key and kind for an API: Kafka renamed some), or
    Kafka's own name when kcodec lacks the message."""
    if schema["type"] in ("request", "response") and "api_key" in schema:
        try:
            return definitions.by_api_key(schema["api_key"], schema["type"])
        except KeyError:
            return schema["name"]
    name = {"ControlRecordTypeSchema": "ControlRecordType"}.get(schema["name"], schema["name"])
    return name


def _kafka_versions(oracle: Any) -> dict[str, set[int]]:
    """Every message's versions in Kafka 4.4 ∪ 3.9 (by their generated classes: a schema without one, as
    4.4's for the APIs KIP-896 removed, has none)."""
    out: dict[str, set[int]] = {}
    for catalog in oracle.catalogs.values():
        for schema in catalog["schemas"]:
            if "class" in schema:
                out.setdefault(_kcodec_name(schema), set()).update(range(schema["lowest"], schema["highest"] + 1))
    return out


def test_every_kafka_version_is_checked_or_listed(oracle: Any) -> None:
    kafka = _kafka_versions(oracle)
    missing = {name: sorted(vs - set(definitions.get(name).versions if name in definitions.names() else ()))
               for name, vs in kafka.items()}
    missing = {name: vs for name, vs in missing.items() if vs}
    listed = {name: vs for name, (vs, _) in NOT_IN_KCODEC.items()}
    assert missing == listed, (f"not in kcodec and not listed: {sorted(set(missing.items()) - set(listed.items()))}; "
                               f"listed but not missing: {sorted(set(listed.items()) - set(missing.items()))}")


def test_every_kcodec_version_has_a_kafka_class_or_is_listed(oracle: Any) -> None:
    from kafka_json import kafka_class

    without = {n: [v for v in definitions.get(n).versions if oracle.line_for(kafka_class(n), v) is None]
               for n in definitions.names()}
    without = {n: vs for n, vs in without.items() if vs}
    assert without == {n: list(definitions.get(n).versions) for n in NOT_IN_KAFKA}


def test_which_line_checks_what(oracle: Any) -> None:
    """Kafka 4.4 checks every version it has; 3.9 only those 4.0 removed (KIP-896) or never kept."""
    from kafka_json import kafka_class

    lines: dict[str, int] = {}
    for name in definitions.names():
        for v in definitions.get(name).versions:
            line = oracle.line_for(kafka_class(name), v)
            if line is not None:
                lines[line] = lines.get(line, 0) + 1
                if line == "3.9":
                    assert v not in (oracle.versions("4.4", kafka_class(name)) or ())
    assert set(lines) == {"4.4", "3.9"} and lines["4.4"] > lines["3.9"] > 0, lines
    assert oracle.catalogs["4.4"]["kafka"] == "4.4.0" and oracle.catalogs["3.9"]["kafka"] == "3.9.2"
