"""Topic and broker configuration: the keys the broker knows, their defaults, types and validation.

Values travel as strings on the wire (as in Kafka); this module checks that a value parses as its
type and says where it came from (Kafka's ConfigSource and ConfigType codes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

# Kafka's DescribeConfigsResponse ConfigSource codes.
SOURCE_DYNAMIC_TOPIC = 1
SOURCE_DYNAMIC_DEFAULT_BROKER = 3
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5

# Kafka's ConfigType codes (DescribeConfigs v3+).
TYPES = {"boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6, "list": 7}

# ConfigResource types.
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4

# IncrementalAlterConfigs operations.
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: str
    default: Optional[str]
    doc: str = ""
    choices: tuple[str, ...] = ()
    source: int = SOURCE_DEFAULT  # where the default comes from
    listed: bool = True  # listed with every topic's configs (False: only where a topic sets it)


def _k(name: str, type_: str, default: Optional[str], doc: str = "", choices: tuple[str, ...] = (),
       source: int = SOURCE_DEFAULT, listed: bool = True) -> ConfigKey:
    return ConfigKey(name, type_, default, doc, choices, source, listed)


# Kafka 4.4's topic-level configs with their defaults (what CreateTopics v5+ and DescribeConfigs list for a
# topic of a default cluster), plus KIP-619's `internal` (the seed's; Kafka has no such config), which is
# listed only for topics that set it.
TOPIC_CONFIGS: dict[str, ConfigKey] = {k.name: k for k in [
    _k("cleanup.policy", "list", "delete", "delete and/or compact", ("compact", "delete")),
    _k("compression.gzip.level", "int", "-1"),
    _k("compression.lz4.level", "int", "9"),
    _k("compression.type", "string", "producer", "",
       ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    _k("compression.zstd.level", "int", "3"),
    _k("delete.retention.ms", "long", "86400000"),
    _k("errors.deadletterqueue.group.enable", "boolean", "false"),
    _k("file.delete.delay.ms", "long", "60000"),
    _k("flush.messages", "long", "9223372036854775807"),
    _k("flush.ms", "long", "9223372036854775807"),
    _k("follower.replication.throttled.replicas", "list", ""),
    _k("index.interval.bytes", "int", "4096"),
    _k("internal", "boolean", "false", "KIP-619: a user-defined internal topic", listed=False),
    _k("leader.replication.throttled.replicas", "list", ""),
    _k("local.retention.bytes", "long", "-2"),
    _k("local.retention.ms", "long", "-2"),
    _k("max.compaction.lag.ms", "long", "9223372036854775807"),
    _k("max.decompressed.message.bytes", "int", "2147483639"),
    _k("max.message.bytes", "int", "1048588"),
    _k("message.timestamp.after.max.ms", "long", "3600000"),
    _k("message.timestamp.before.max.ms", "long", "9223372036854775807"),
    _k("message.timestamp.type", "string", "CreateTime", "", ("CreateTime", "LogAppendTime")),
    _k("min.cleanable.dirty.ratio", "double", "0.5"),
    _k("min.compaction.lag.ms", "long", "0"),
    # Kafka 4's storage format writes min.insync.replicas as the cluster's dynamic default (KIP-966)
    _k("min.insync.replicas", "int", "1", source=SOURCE_DYNAMIC_DEFAULT_BROKER),
    _k("preallocate", "boolean", "false"),
    _k("remote.copy.lag.bytes", "long", "-1"),
    _k("remote.copy.lag.ms", "long", "0"),
    _k("remote.log.copy.disable", "boolean", "false"),
    _k("remote.log.delete.on.disable", "boolean", "false"),
    _k("remote.storage.enable", "boolean", "false"),
    _k("retention.bytes", "long", "-1"),
    _k("retention.ms", "long", "604800000"),
    _k("segment.bytes", "int", "1073741824"),
    _k("segment.index.bytes", "int", "10485760"),
    _k("segment.jitter.ms", "long", "0"),
    _k("segment.ms", "long", "604800000"),
    _k("unclean.leader.election.enable", "boolean", "false"),
]}

_INT_BOUNDS = {"short": 1 << 15, "int": 1 << 31, "long": 1 << 63}


class ConfigError(ValueError):
    """A config name or value the broker refuses (Kafka's INVALID_CONFIG)."""


def check_value(key: ConfigKey, value: Optional[str]) -> str:
    """The value if it parses as the key's type, else ConfigError worded as Kafka's ConfigDef words it."""
    if value is None:
        raise ConfigError(f"Null value not supported for topic config '{key.name}'")
    t = key.type
    if t == "boolean" and value.strip().lower() not in ("true", "false"):
        raise ConfigError(_invalid(key, value, "Expected value to be either true or false"))
    try:
        if t in _INT_BOUNDS:
            n = int(value.strip())
            if not -_INT_BOUNDS[t] <= n < _INT_BOUNDS[t]:
                raise ValueError
        elif t == "double":
            float(value)
    except ValueError:
        raise ConfigError(_invalid(key, value, f"Not a number of type {t.upper()}")) from None
    items = [v.strip() for v in value.split(",") if v.strip()] if t == "list" else [value]
    if key.choices and any(v not in key.choices for v in items):
        raise ConfigError(_invalid(key, value, f"String must be one of: {', '.join(key.choices)}"))
    return value


def _invalid(key: ConfigKey, value: str, why: str) -> str:
    return f"Invalid value {value} for configuration {key.name}: {why}"


def topic_key(name: str) -> ConfigKey:
    try:
        return TOPIC_CONFIGS[name]
    except KeyError:
        raise ConfigError(f"Unknown topic config name: {name}") from None


def validate_topic_configs(configs: dict[str, Optional[str]]) -> dict[str, str]:
    return {name: check_value(topic_key(name), value) for name, value in configs.items()}


def is_internal(configs: dict[str, str]) -> bool:
    return configs.get("internal", "false").lower() == "true"


def apply_incremental(current: dict[str, str], ops: list[tuple[str, int, Optional[str]]]) -> dict[str, str]:
    """IncrementalAlterConfigs on a topic's overrides: SET, DELETE, APPEND and SUBTRACT (lists only)."""
    out = dict(current)
    seen = set()
    for name, op, value in ops:
        if name in seen:
            raise ConfigError(f"Duplicate config key {name} in one request")
        seen.add(name)
        key = topic_key(name)
        if op == OP_SET:
            out[name] = check_value(key, value)
        elif op == OP_DELETE:
            out.pop(name, None)
        elif op in (OP_APPEND, OP_SUBTRACT):
            if key.type != "list":
                raise ConfigError(f"Config {name} is not a list: APPEND and SUBTRACT need a list config")
            have = [v for v in out.get(name, key.default or "").split(",") if v]
            given = [v.strip() for v in (value or "").split(",") if v.strip()]
            have = have + [v for v in given if v not in have] if op == OP_APPEND else \
                [v for v in have if v not in given]
            out[name] = check_value(key, ",".join(have))
        else:
            raise ConfigError(f"Unknown config operation {op} for {name}")
    return out


def describe(overrides: dict[str, str], names: Optional[list[str]] = None
             ) -> list[tuple[ConfigKey, Optional[str], int]]:
    """(key, value, source) for every listed topic config (or the named ones), overrides first-class."""
    keys = TOPIC_CONFIGS if names is None else {n: TOPIC_CONFIGS[n] for n in names if n in TOPIC_CONFIGS}
    out: list[tuple[ConfigKey, Optional[str], int]] = []
    for name, key in sorted(keys.items()):
        if name in overrides:
            out.append((key, overrides[name], SOURCE_DYNAMIC_TOPIC))
        elif key.listed or names is not None:
            out.append((key, key.default, key.source))
    return out
