"""What the admin calls return: one value per topic, each with Kafka's error name (``ErrorCode.NONE`` when fine)."""

from __future__ import annotations

import dataclasses
import enum
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from kcodec.errors import ErrorCode


@dataclass
class NewTopic:
    """A topic to create. Partitions or replication factor left as None take the broker's defaults
    (KIP-464: ``num.partitions``, ``default.replication.factor``; CreateTopics v4+)."""

    name: str
    partitions: Optional[int] = None
    replication_factor: Optional[int] = None
    configs: Mapping[str, Optional[str]] = field(default_factory=dict)
    assignments: Optional[Mapping[int, list[int]]] = None  # partition -> broker ids


@dataclass
class TopicListing:
    name: str
    internal: bool


@dataclass
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline: list[int]
    error: ErrorCode = ErrorCode.NONE


@dataclass
class TopicDescription:
    name: str
    error: ErrorCode = ErrorCode.NONE
    topic_id: Optional[uuid.UUID] = None
    internal: bool = False
    partitions: list[PartitionInfo] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error == ErrorCode.NONE


@dataclass
class ConfigEntry:
    name: str
    value: Optional[str]
    read_only: bool = False
    source: int = -1  # Kafka's ConfigSource: 1 topic, 2-4 broker, 5 default, ...
    sensitive: bool = False
    default: bool = False


@dataclass
class TopicResult:
    """The outcome for one topic of a delete or create-partitions call."""

    name: str
    error: ErrorCode = ErrorCode.NONE
    message: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.error == ErrorCode.NONE


@dataclass
class CreateTopicResult(TopicResult):
    """KIP-525: brokers speaking CreateTopics v5+ say what they made; older ones leave these None."""

    topic_id: Optional[uuid.UUID] = None
    partitions: Optional[int] = None
    replication_factor: Optional[int] = None
    configs: Optional[dict[str, ConfigEntry]] = None
    config_error: ErrorCode = ErrorCode.NONE  # set when the broker withheld the configs


@dataclass
class TopicConfigs(TopicResult):
    configs: dict[str, ConfigEntry] = field(default_factory=dict)


@dataclass
class BrokerNode:
    node_id: int
    host: str
    port: int
    rack: Optional[str] = None


@dataclass
class ApiRange:
    api_key: int
    name: str
    min_version: int
    max_version: int


@dataclass
class ClusterDescription:
    """``Client.describe_cluster()``: who the cluster is, and what its admin broker speaks."""

    cluster_id: Optional[str]
    controller: Optional[int]
    brokers: list[BrokerNode]
    apis: list[ApiRange]              # what the admin broker advertised in ApiVersions
    release: str                      # kcodec.versions.guess_release, in words ("3.7", "newer than 4.3")
    release_exact: bool               # True: the API ranges match that release exactly


def as_json(value: Any) -> Any:
    """Results as JSON-able data: error codes by name, uuids as strings."""
    if isinstance(value, list):
        return [as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: as_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, uuid.UUID):
        return str(value)
    return value
