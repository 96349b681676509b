"""Kafka 4.4's broker configs from a real Kafka, for kcodec broker's DescribeConfigs: writes
broker/kcodec_broker/kafka_broker_configs.json (generated: never edit it by hand).

    python tests/kafka/broker_configs.py        # starts Apache Kafka (real_kafka.py), asks it, writes the file

``collect`` asks a running Kafka (one node, id 1):
- DescribeConfigs of broker 1 with synonyms and documentation: every config Kafka's broker defines, with its
  type, documentation, whether it is read-only (not dynamic) or sensitive, and its default (the DEFAULT_CONFIG
  synonym; a config the node's own properties set says its default there too). Names Kafka does not define
  (a node's listener-prefixed JAAS settings, its authorizer's super.users) are the node's own: left out.
- DescribeConfigs of the cluster's default resource (""): the dynamic defaults a new cluster starts with.
- DescribeConfigs of a new topic with synonyms: each topic config's broker config (its default's synonym).
- IncrementalAlterConfigs, validate only, of each dynamic config at the cluster level: the ones Kafka takes
  per broker only and the security ones it takes per listener only.
tests/kafka/test_broker_configs_file.py checks the committed file against the Kafka the tests run.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import conformance as cf  # noqa: E402
import real_kafka as rk  # noqa: E402

from kcodec.messages import (CreateTopicsRequest, DeleteTopicsRequest, DescribeConfigsRequest,  # noqa: E402
                             IncrementalAlterConfigsRequest)

OUTPUT = rk.REPO / "broker" / "kcodec_broker" / "kafka_broker_configs.json"  # kcodec-broker's package data
BROKER, TOPIC = 4, 2
DEFAULT_SOURCE = 5
REFUSED_AT_CLUSTER_LEVEL = {  # what Kafka's message starts with: the kind of refusal
    "Cannot update these configs at default cluster level": "per_broker",
    "These security configs can be dynamically updated only per-listener": "per_listener",
}


def _describe(r: cf.Recorder, resource_type: int, name: str) -> Any:
    req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=None)],
        include_synonyms=True, include_documentation=True)
    result = r.quiet(req, 4).results[0]
    assert result.error_code == 0, result
    return result.configs


def _default(entry: Any) -> Any:
    return next((s.value for s in entry.synonyms if s.source == DEFAULT_SOURCE),
                entry.value if entry.config_source == DEFAULT_SOURCE else None)


def _refused_at_cluster_level(r: cf.Recorder, name: str, value: str) -> str:
    res = IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=BROKER, resource_name="", configs=[
        IncrementalAlterConfigsRequest.AlterableConfig(name=name, config_operation=0, value=value)])
    answer = r.quiet(IncrementalAlterConfigsRequest(resources=[res], validate_only=True), 1).responses[0]
    return next((kind for start, kind in REFUSED_AT_CLUSTER_LEVEL.items()
                 if (answer.error_message or "").startswith(start)), "")


def _topic_synonyms(r: cf.Recorder) -> dict[str, str]:
    name = f"broker-configs-{uuid.uuid4().hex[:8]}"
    made = r.quiet(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1)], timeout_ms=30000), 7)
    assert made.topics[0].error_code == 0, made
    r.wait_topics([name])
    try:
        return {e.name: s.name for e in _describe(r, TOPIC, name) for s in e.synonyms if s.source == DEFAULT_SOURCE}
    finally:
        r.quiet(DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=name)], timeout_ms=30000), 6)


def collect(address: tuple[str, int]) -> dict[str, Any]:
    """The file's content, from the Kafka node 1 listening (PLAINTEXT) at ``address``."""
    r = cf.Recorder(cf.Target("kafka", [address]), "broker-configs")
    try:
        configs = {}
        for e in sorted(_describe(r, BROKER, "1"), key=lambda e: e.name):
            if e.documentation is None:  # a name Kafka does not define: the node's own
                continue
            configs[e.name] = {"type": e.config_type, "default": _default(e), "read_only": e.read_only,
                               "sensitive": e.is_sensitive, "doc": e.documentation}
        dynamic_defaults = {e.name: e.value for e in sorted(_describe(r, BROKER, ""), key=lambda e: e.name)}
        refused: dict[str, list[str]] = {kind: [] for kind in REFUSED_AT_CLUSTER_LEVEL.values()}
        for name, c in configs.items():
            if not c["read_only"]:
                kind = _refused_at_cluster_level(r, name, c["default"] if c["default"] is not None else "x")
                if kind:
                    refused[kind].append(name)
        return {"generated": f"by tests/kafka/broker_configs.py from Apache Kafka {rk.KAFKA_VERSION}'s answers; "
                             "do not edit (tests/kafka/test_broker_configs_file.py checks it against that Kafka)",
                "kafka_version": rk.KAFKA_VERSION, "configs": configs, "dynamic_defaults": dynamic_defaults,
                "topic_synonyms": dict(sorted(_topic_synonyms(r).items())), **refused}
    finally:
        r.close()


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    cluster = rk.start(1)
    try:
        OUTPUT.write_text(render(collect(cluster.addresses[0])))
    finally:
        cluster.stop()
    print(f"{OUTPUT}: {len(json.loads(OUTPUT.read_text())['configs'])} broker configs of Apache Kafka {rk.KAFKA_VERSION}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
