"""A broker's configs as Kafka 4.4's DescribeConfigs gives them, and the dynamic ones IncrementalAlterConfigs and
AlterConfigs change.

Every config Kafka's broker defines, with its type, documentation, default and whether it is dynamic or
sensitive, comes from kafka_broker_configs.json, generated from a real Kafka's answers by
tests/kafka/broker_configs.py (never edited by hand; a test checks it against that Kafka). Their values are
kcodec broker's: its own settings (``static_configs``: node id, listeners, SASL mechanisms, the authorizer,
log directory, coordinators' settings ...) where they differ from Kafka's defaults, then what clients set at
run time (``DynamicBrokerConfigs``, kept in the state file): per broker (source DYNAMIC_BROKER_CONFIG) or as
the cluster's default (the "" resource, DYNAMIC_DEFAULT_BROKER_CONFIG). A topic config without an override
takes its broker config's dynamic value (``topic_default``), as Kafka's LogConfig does.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional

from kcodec.errors import ErrorCode

from . import configs as cfg
from .admin_error import AdminError

if TYPE_CHECKING:
    from .context import ClusterRuntime

CATALOG: dict[str, Any] = json.loads(Path(__file__).with_name("kafka_broker_configs.json").read_text(encoding="utf-8"))
CONFIGS: dict[str, dict[str, Any]] = CATALOG["configs"]
DEFAULTS = {name: c["default"] for name, c in CONFIGS.items() if c["default"] is not None}
TOPIC_SYNONYMS: dict[str, str] = CATALOG["topic_synonyms"]  # topic config: the broker config it defaults to
PER_BROKER = frozenset(CATALOG["per_broker"])      # dynamic only per broker, never as the cluster's default
PER_LISTENER = frozenset(CATALOG["per_listener"])  # security configs dynamic only with a listener prefix

SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT, SOURCE_STATIC, SOURCE_DEFAULT = 2, 3, 4, 5
TYPE_UNKNOWN, TYPE_PASSWORD = 0, 9
_TYPE_NAMES = {1: "boolean", 2: "string", 3: "int", 4: "short", 5: "long", 6: "double", 7: "list"}
MIN_ISR = "min.insync.replicas"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# Kafka's DynamicBrokerConfig.brokerConfigSynonyms: a setting in ms and the coarser ones it falls back to
_FALLBACKS = {"log.retention.ms": ("log.retention.minutes", "log.retention.hours"), "log.roll.ms": ("log.roll.hours",),
              "log.roll.jitter.ms": ("log.roll.jitter.hours",),
              "log.flush.interval.ms": ("log.flush.scheduler.interval.ms",)}
# and a topic config whose broker config's default sits on such a coarser one (the generated file, read from a
# topic's DEFAULT_CONFIG synonyms, cannot name them)
_TOPIC_FALLBACKS = {"retention.ms": "log.retention.ms", "segment.ms": "log.roll.ms", "segment.jitter.ms": "log.roll.jitter.ms",
                    "flush.ms": "log.flush.interval.ms"}
_LISTENER_PREFIXED = re.compile(r"listener\.name\.[^.]+\.(.+)")
_JAVA_INT = re.compile(r"[+-]?\d{1,10}")

Synonym = tuple[str, Optional[str], int]  # name, value, source


class Entry(NamedTuple):
    name: str
    value: Optional[str]
    source: int
    read_only: bool
    sensitive: bool
    type: int                       # Kafka's ConfigType id (DescribeConfigs v3+)
    doc: Optional[str]
    synonyms: list[Synonym]


def synonyms_of(name: str) -> list[str]:
    """The names a broker config falls back to, itself first (a listener's override: the config it overrides)."""
    m = _LISTENER_PREFIXED.fullmatch(name)
    return [name, m.group(1)] if m else [name, *_FALLBACKS.get(name, ())]


def _info(name: str) -> tuple[int, bool, bool, Optional[str]]:
    """(type, read only, sensitive, documentation); a name Kafka does not define is of unknown type, sensitive
    and read-only, without documentation, as Kafka describes it."""
    c = CONFIGS.get(name)
    if c is not None:
        return c["type"], c["read_only"], c["sensitive"], c["doc"]
    m = _LISTENER_PREFIXED.fullmatch(name)
    t = CONFIGS[m.group(1)]["type"] if m and m.group(1) in CONFIGS else TYPE_UNKNOWN
    return t, True, t in (TYPE_UNKNOWN, TYPE_PASSWORD), None


class DynamicBrokerConfigs:
    """The broker configs set at run time: the cluster's defaults and each broker's own. A new cluster has
    Kafka's (its storage format writes min.insync.replicas as the cluster's default)."""

    def __init__(self) -> None:
        self.cluster: dict[str, str] = {k: v for k, v in CATALOG["dynamic_defaults"].items() if v is not None}
        self.brokers: dict[int, dict[str, str]] = {}

    def level(self, node: Optional[int]) -> dict[str, str]:
        """The configs of one broker, or (None) the cluster's defaults."""
        return self.cluster if node is None else self.brokers.get(node, {})

    def set(self, node: Optional[int], configs: dict[str, str]) -> None:
        if node is None:
            self.cluster = dict(configs)
        elif configs:
            self.brokers[node] = dict(configs)
        else:
            self.brokers.pop(node, None)

    def __bool__(self) -> bool:
        """Whether anything differs from a new cluster's (what the state file keeps)."""
        return bool(self.brokers) or self.cluster != DynamicBrokerConfigs().cluster

    def to_json(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "brokers": {str(n): c for n, c in sorted(self.brokers.items())}}

    def load_json(self, data: dict[str, Any]) -> None:
        if data:
            self.cluster = {str(k): str(v) for k, v in data.get("cluster", {}).items()}
            self.brokers = {int(n): {str(k): str(v) for k, v in c.items()} for n, c in data.get("brokers", {}).items()}


def static_configs(runtime: "ClusterRuntime", node: int) -> dict[str, str]:
    """kcodec broker's own settings of broker ``node`` as Kafka's configs (a broker's server.properties), those
    equal to Kafka's default left out (Kafka then says DEFAULT_CONFIG)."""
    state, groups, txns = runtime.state, runtime.group_settings, runtime.transaction_settings
    info = state.brokers.get(node)
    endpoints = dict(info.endpoints) if info is not None and info.endpoints else {}
    listeners = [lst for lst in runtime.listeners if lst.name in endpoints]
    mechanisms = next((lst.sasl_settings.mechanisms for lst in listeners if lst.sasl), ())
    system_rf = str(min(3, len(state.broker_ids)))
    data_file = state.data_file
    values = {
        "node.id": str(node), "broker.id": str(node), "process.roles": "broker,controller",
        "listeners": ",".join(f"{lst.name}://{endpoints[lst.name][0]}:{endpoints[lst.name][1]}" for lst in listeners),
        "listener.security.protocol.map": ",".join(f"{lst.name}:{lst.security_protocol}" for lst in listeners),
        "log.dirs": str(data_file.parent) if data_file is not None else "memory",
        "broker.rack": info.rack if info is not None else None,
        "sasl.enabled.mechanisms": ",".join(mechanisms) if mechanisms else None,
        "authorizer.class.name": STANDARD_AUTHORIZER if runtime.authorizer.enabled else None,
        "super.users": ";".join(sorted(runtime.authorizer.super_users)) or None,
        "num.partitions": str(state.num_partitions),
        "default.replication.factor": str(state.default_replication_factor),
        "auto.create.topics.enable": str(state.auto_create_topics).lower(),
        "offsets.topic.replication.factor": system_rf, "transaction.state.log.replication.factor": system_rf,
        "transaction.state.log.min.isr": str(min(2, len(state.broker_ids))),
        "replica.lag.time.max.ms": str(state.replica_lag_time_max_ms),
        "socket.request.max.bytes": str(runtime.max_frame_size),
        "sasl.server.max.receive.size": str(runtime.sasl_max_receive_size),
        "connections.max.idle.ms": str(int(runtime.idle_timeout * 1000)),
        "fetch.max.bytes": str(runtime.fetch_max_bytes),
        "replica.selector.class": runtime.replica_selector,
        "telemetry.max.bytes": str(runtime.telemetry_max_bytes),
        "group.initial.rebalance.delay.ms": str(groups.initial_rebalance_delay_ms),
        "group.min.session.timeout.ms": str(groups.min_session_timeout_ms),
        "group.max.session.timeout.ms": str(groups.max_session_timeout_ms),
        "group.max.size": str(groups.max_size) if groups.max_size is not None else None,
        "group.consumer.session.timeout.ms": str(groups.consumer_session_timeout_ms),
        "group.consumer.heartbeat.interval.ms": str(groups.consumer_heartbeat_interval_ms),
        "transaction.max.timeout.ms": str(txns.max_timeout_ms),
        "transactional.id.expiration.ms": str(txns.id_expiration_ms),
        "transaction.two.phase.commit.enable": str(txns.two_phase_commit).lower(),
    }
    values["advertised.listeners"] = values["listeners"]
    return {k: v for k, v in values.items() if v is not None and (k not in CONFIGS or v != DEFAULTS.get(k))}


def describe(static: dict[str, str], dynamic: DynamicBrokerConfigs, node: Optional[int],
             names: Optional[list[str]] = None) -> list[Entry]:
    """Kafka's ConfigHelper for broker ``node`` (every config it has a value or definition for), or (None)
    for the cluster's default resource (the dynamic defaults alone). Synonyms go level by level (dynamic for
    the broker, the cluster's dynamic default, static, default), each of a config's names in turn, from
    its own name's first one on."""
    if node is None:
        wanted = sorted(dynamic.cluster)
        levels: list[tuple[int, dict[str, str]]] = [(SOURCE_DYNAMIC_DEFAULT, dynamic.cluster)]
    else:
        wanted = sorted(set(CONFIGS) | set(static) | set(dynamic.cluster) | set(dynamic.level(node)))
        levels = [(SOURCE_DYNAMIC_BROKER, dynamic.level(node)), (SOURCE_DYNAMIC_DEFAULT, dynamic.cluster),
                  (SOURCE_STATIC, static), (SOURCE_DEFAULT, DEFAULTS)]
    out = []
    for name in wanted:
        if names is not None and name not in names:
            continue
        found = _synonyms(name, synonyms_of(name) if node is not None else [name], levels)
        type_, read_only, sensitive, doc = _info(name)
        if sensitive:
            found = [(s, None, source) for s, _, source in found]
        out.append(Entry(name, found[0][1] if found else None, found[0][2] if found else SOURCE_DEFAULT,
                         read_only, sensitive, type_, doc, found))
    return out


def _synonyms(name: str, chain: list[str], levels: list[tuple[int, dict[str, str]]]) -> list[Synonym]:
    """Kafka's ConfigHelper.configSynonyms: level by level, each name of the chain, from ``name``'s first on."""
    found: list[Synonym] = [(s, values[s], source) for source, values in levels for s in chain if s in values]
    while found and found[0][0] != name:
        found.pop(0)
    return found


def broker_level(name: str, node_id: int, describing: bool) -> Optional[int]:
    """The broker a config resource names, as the broker ``node_id`` reads it: None for the cluster's
    default (""), else ``node_id`` itself; Kafka's INVALID_REQUEST (an AdminError) for anything else."""
    if name == "":
        return None
    if not _JAVA_INT.fullmatch(name) or not -2 ** 31 <= int(name) < 2 ** 31:
        raise AdminError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}" if describing
                         else f"Node id must be an integer, but it is: {name}")
    if int(name) != node_id:
        raise AdminError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {node_id}"
                                                    f"{' or empty string' if describing else ''}, but received {name}")
    return node_id


def alter(current: dict[str, str], ops: list[tuple[str, int, Optional[str]]], *, cluster: bool, incremental: bool,
          effective: Callable[[str], Optional[str]]) -> dict[str, str]:
    """A level's configs after ``ops`` (name, operation, value; AlterConfigs: SET, all of them replacing the
    level's), or an AdminError as Kafka refuses them (INVALID_REQUEST; INVALID_CONFIG for the ELR rules)."""
    names = [name for name, _, _ in ops]
    if len(set(names)) != len(names):
        raise AdminError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    new = dict(current) if incremental else {}
    for name, op, value in ops:
        if op == cfg.OP_SET:
            if value is None:
                raise AdminError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {name}")
            new[name] = value
        elif op == cfg.OP_DELETE:
            new.pop(name, None)
        elif op in (cfg.OP_APPEND, cfg.OP_SUBTRACT):
            have = [v for v in (new.get(name) or effective(name) or "").split(",") if v]
            given = [v.strip() for v in (value or "").split(",") if v.strip()]
            new[name] = ",".join(have + [v for v in given if v not in have] if op == cfg.OP_APPEND
                                 else [v for v in have if v not in given])
        else:
            raise AdminError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op} for {name}")
    changed = names if incremental else sorted(set(current) | set(new))
    _refuse_names(changed, lambda n: n in CONFIGS and CONFIGS[n]["read_only"],
                  "Cannot update these configs dynamically")
    if cluster:
        _refuse_names(changed, lambda n: n in PER_BROKER or bool(_LISTENER_PREFIXED.fullmatch(n)),
                      "Cannot update these configs at default cluster level, broker id must be specified")
    _refuse_names(changed, lambda n: n in PER_LISTENER,
                  "These security configs can be dynamically updated only per-listener using the listener prefix")
    for name in changed:
        type_ = CONFIGS[name]["type"] if name in CONFIGS else TYPE_UNKNOWN
        if name in new and type_ in _TYPE_NAMES:
            try:
                cfg.check_value(cfg.ConfigKey(name, _TYPE_NAMES[type_], None), new[name])
            except cfg.ConfigError as e:
                raise AdminError(ErrorCode.INVALID_REQUEST, str(e)) from None
    if MIN_ISR in changed:  # Kafka 4's eligible leader replicas (KIP-966) hold the cluster's value fixed
        if not cluster:
            raise AdminError(ErrorCode.INVALID_CONFIG, "Broker-level min.insync.replicas cannot be altered while "
                                                       "ELR is enabled.")
        if MIN_ISR not in new:
            raise AdminError(ErrorCode.INVALID_CONFIG, "Cluster-level min.insync.replicas cannot be removed while "
                                                       "ELR is enabled.")
    return new


def _refuse_names(names: list[str], refused: Callable[[str], bool], why: str) -> None:
    bad = [n for n in names if refused(n)]
    if bad:
        raise AdminError(ErrorCode.INVALID_REQUEST, f"{why}: [{', '.join(bad)}]")


def _topic_broker_name(topic_config: str) -> Optional[str]:
    """The broker config a topic config defaults to, if any."""
    return TOPIC_SYNONYMS.get(topic_config) or _TOPIC_FALLBACKS.get(topic_config)


def _dynamic_levels(dynamic: DynamicBrokerConfigs, node: int) -> list[tuple[int, dict[str, str]]]:
    """The dynamic levels a broker config is read from on broker ``node``, the first that sets it winning."""
    return [(SOURCE_DYNAMIC_BROKER, dynamic.level(node)), (SOURCE_DYNAMIC_DEFAULT, dynamic.cluster)]


def topic_default(dynamic: DynamicBrokerConfigs, node: int, topic_config: str) -> Optional[list[Synonym]]:
    """A topic config's broker synonym at each level that sets it, dynamic ones first (Kafka's LogConfig
    defaults); None when the topic config has no broker synonym."""
    broker_name = _topic_broker_name(topic_config)
    if broker_name is None:
        return None
    return _synonyms(broker_name, synonyms_of(broker_name),
                     [*_dynamic_levels(dynamic, node), (SOURCE_DEFAULT, DEFAULTS)])


def topic_configs(dynamic: DynamicBrokerConfigs, node: int, overrides: dict[str, str],
                  names: Optional[list[str]] = None) -> list[tuple[cfg.ConfigKey, Optional[str], int, list[Synonym]]]:
    """A topic's configs as Kafka describes them on broker ``node``: (key, value, source, synonyms), the value
    its override, else its broker config's dynamic value, else Kafka's default; the synonyms the override,
    then the broker config at each level that sets it."""
    out = []
    for key, value, source in cfg.describe(overrides, names):
        broker = topic_default(dynamic, node, key.name) or []
        if source != cfg.SOURCE_DYNAMIC_TOPIC and broker and broker[0][2] != SOURCE_DEFAULT:
            value, source = broker[0][1], broker[0][2]
        own: list[Synonym] = [(key.name, value, source)] if source == cfg.SOURCE_DYNAMIC_TOPIC else []
        out.append((key, value, source, own + broker))
    return out


def topic_value(dynamic: DynamicBrokerConfigs, node: int, overrides: dict[str, str], name: str) -> str:
    """A topic config's value in force: the topic's override, its broker config's dynamic value, the default."""
    if name in overrides:
        return overrides[name]
    # topic_default's first synonym without building the list (every Produce reads nine of these): the first
    # dynamic level that sets the broker config itself
    broker_name = _topic_broker_name(name)
    if broker_name is not None:
        for _, values in _dynamic_levels(dynamic, node):
            if broker_name in values:
                return values[broker_name]
    return cfg.TOPIC_CONFIGS[name].default or ""


# BROKER_LOGGER resources: the broker's loggers (Kafka's Log4j ones; here Python's root and kcodec's), by level
SOURCE_BROKER_LOGGER = 6
_LEVELS = [(logging.CRITICAL, "FATAL"), (logging.ERROR, "ERROR"), (logging.WARNING, "WARN"), (logging.INFO, "INFO"),
           (logging.DEBUG, "DEBUG")]


def logger_level(name: str, node_id: int) -> None:
    """Whether a BROKER_LOGGER resource names broker ``node_id``: Kafka's INVALID_REQUEST otherwise."""
    if name == "":
        raise AdminError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    if not _JAVA_INT.fullmatch(name) or not -2 ** 31 <= int(name) < 2 ** 31:
        raise AdminError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}")
    if int(name) != node_id:
        raise AdminError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {node_id} but received {name}")


def loggers(names: Optional[list[str]] = None) -> list[Entry]:
    """The root logger, kcodec's and the broker's, each with its effective level in Log4j's words (Kafka's
    LoggingController)."""
    found = {"root": logging.getLogger(), **{n: logging.getLogger(n) for n in sorted(logging.Logger.manager.loggerDict)
                                            if n.split(".")[0] in ("kcodec", "kcodec_broker")}}
    out = []
    for name, logger in found.items():
        if names is None or name in names:
            level = logger.getEffectiveLevel()
            word = next((w for at, w in _LEVELS if level >= at), "TRACE")
            out.append(Entry(name, word, SOURCE_BROKER_LOGGER, False, False, TYPE_UNKNOWN, "", []))
    return out
