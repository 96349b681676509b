r"""CLIENT_METRICS config resources (KIP-714): the subscriptions operators define, their validation and
their persistence.

A subscription is a named set of configs: ``metrics`` (metric name prefixes; ``*`` is every metric),
``interval.ms`` (how often matching clients push, 100 ms to one hour) and ``match`` (``selector=regex``
pairs over the client's instance id, client id, software name and version, source address and port;
none: every client). As Kafka's ClientMetricsConfigs: an unknown config name or an interval out of range
is INVALID_REQUEST, a value that does not parse as its type or a bad selector is INVALID_CONFIG. A
subscription whose configs are all deleted no longer exists.

``match`` regexes: Kafka 4.0-4.2 compile them with Java's ``java.util.regex``, and its newer brokers with
RE2/J first (falling back to ``java.util.regex`` for older subscriptions). Here RE2 compiles them first
(``regex.compile_pattern``; google-re2, a dependency of kcodec-broker): it takes the Java syntax Python's ``re`` refuses
and users write (``\p{L}``, ``\Q...\E``, ``\z``, ``(?<name>...)``, flags such as ``(?i)`` inside the
pattern). What RE2 refuses, Python's ``re`` tries (backreferences, lookaround, possessive and atomic
groups, which Java has too). Either way a pattern must match the whole value, as Java's ``matches()``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Protocol

from kcodec.errors import ErrorCode

from . import configs as cfg
from .admin_error import AdminError
from .regex import InvalidRegex, compile_pattern

RESOURCE_CLIENT_METRICS = 16
SOURCE_CLIENT_METRICS = 7  # Kafka's ConfigSource.CLIENT_METRICS_CONFIG
ALL_METRICS = "*"
INTERVAL_MS_DEFAULT = 5 * 60 * 1000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
SELECTORS = ("client_instance_id", "client_id", "client_software_name", "client_software_version",
             "client_source_address", "client_source_port")

CONFIGS: dict[str, cfg.ConfigKey] = {k.name: k for k in [
    cfg.ConfigKey("interval.ms", "int", str(INTERVAL_MS_DEFAULT), "Metrics push interval in milliseconds"),
    cfg.ConfigKey("match", "list", "", "Client match criteria"),
    cfg.ConfigKey("metrics", "list", "", "Telemetry metric name prefix list"),
]}


def split_list(value: Optional[str]) -> list[str]:
    """A LIST config's items, as Kafka's ConfigDef parses them (comma-separated, trimmed; "" is none)."""
    if value is None or not value.strip():
        return []
    return [v.strip() for v in value.split(",")]


class Matcher(Protocol):
    def fullmatch(self, value: str) -> Any: ...


def compile_match(regex: str) -> Matcher:
    """The regex compiled by RE2 or, where RE2 refuses it, by Python's ``re`` (re.error if neither takes it)."""
    try:
        return compile_pattern(regex)  # type: ignore[no-any-return]
    except InvalidRegex:
        return re.compile(regex)


def parse_match(patterns: list[str]) -> dict[str, Matcher]:
    """{selector: compiled regex}; a pattern without exactly one '=', an unknown selector or a bad regex is
    INVALID_CONFIG."""
    out = {}
    for pattern in patterns:
        parts = pattern.split("=")
        name = parts[0].strip()
        if len(parts) != 2 or name not in SELECTORS:
            raise AdminError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}")
        try:
            out[name] = compile_match(parts[1].strip())
        except re.error:
            raise AdminError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}") from None
    return out


def validate(name: str, configs: Mapping[str, Optional[str]]) -> dict[str, str]:
    """The configs if ``name`` may carry them (Kafka's ClientMetricsConfigs.validate), else AdminError."""
    if not name:
        raise AdminError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    for key in configs:
        if key not in CONFIGS:
            raise AdminError(ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
    try:
        checked = {k: cfg.check_value(CONFIGS[k], v) for k, v in configs.items()}
    except cfg.ConfigError as e:
        raise AdminError(ErrorCode.INVALID_CONFIG, str(e)) from None
    if "interval.ms" in checked:
        interval = int(checked["interval.ms"])
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise AdminError(ErrorCode.INVALID_REQUEST, f"Invalid value {interval} for interval.ms, interval must "
                                                        f"be between {MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)")
    if "match" in checked:
        parse_match(split_list(checked["match"]))
    return checked


def apply_incremental(current: dict[str, str], ops: list[tuple[str, int, Optional[str]]]) -> dict[str, str]:
    """IncrementalAlterConfigs' SET, DELETE, APPEND and SUBTRACT on one subscription's configs (APPEND and
    SUBTRACT on a LIST config only, as Kafka's ConfigurationControlManager); validated afterwards."""
    out = dict(current)
    seen = set()
    for name, op, value in ops:
        if name in seen:
            raise AdminError(ErrorCode.INVALID_CONFIG, f"Duplicate config key {name} in one request")
        seen.add(name)
        if op == cfg.OP_SET:
            out[name] = value  # type: ignore[assignment]  # None: refused by validate
        elif op == cfg.OP_DELETE:
            out.pop(name, None)
        elif op in (cfg.OP_APPEND, cfg.OP_SUBTRACT):
            key = CONFIGS.get(name)
            if key is None or key.type != "list":
                verb = "APPEND" if op == cfg.OP_APPEND else "SUBTRACT"
                raise AdminError(ErrorCode.INVALID_CONFIG, f"Can't {verb} to key {name} because its type is not LIST.")
            have, given = split_list(out.get(name)), split_list(value)
            have = have + [v for v in given if v not in have] if op == cfg.OP_APPEND else \
                [v for v in have if v not in given]
            out[name] = ",".join(have)
        else:
            raise AdminError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op} for {name}")
    return out


@dataclass(frozen=True)
class Subscription:
    """One subscription as clients are matched against it."""

    name: str
    metrics: frozenset[str]
    interval_ms: int
    match: dict[str, Matcher]

    @classmethod
    def of(cls, name: str, configs: Mapping[str, str]) -> "Subscription":
        return cls(name, frozenset(split_list(configs.get("metrics"))),
                   int(configs.get("interval.ms", INTERVAL_MS_DEFAULT)), parse_match(split_list(configs.get("match"))))

    def matches(self, attributes: Mapping[str, Optional[str]]) -> bool:
        """Every selector's regex matches the whole attribute (Java's Matcher.matches); none: every client."""
        return all((v := attributes.get(k)) is not None and p.fullmatch(v) is not None for k, p in self.match.items())


class ClientMetricsResources:
    """The subscriptions' configs by name and a version bumped by every change (what tells client instances
    to re-evaluate theirs); kept in the state file with the other configs."""

    def __init__(self) -> None:
        self.configs: dict[str, dict[str, str]] = {}
        self.version = 0
        self._subscriptions: dict[str, Subscription] = {}

    def __bool__(self) -> bool:
        return bool(self.configs)

    def names(self) -> list[str]:
        return sorted(self.configs)

    def subscriptions(self) -> list[Subscription]:
        return [self._subscriptions[n] for n in sorted(self._subscriptions)]

    def set(self, name: str, configs: dict[str, str]) -> None:
        """Replace a subscription's configs (validated); none left: the subscription goes."""
        if configs:
            self.configs[name] = dict(configs)
            self._subscriptions[name] = Subscription.of(name, configs)
        elif name in self.configs:
            del self.configs[name]
            del self._subscriptions[name]
        else:
            return  # deleting what does not exist changes nothing (Kafka ignores it too)
        self.version += 1

    def describe(self, name: str, keys: Optional[list[str]] = None) -> list[tuple[cfg.ConfigKey, str, int]]:
        """(key, value, source) of every config (or the named ones): set ones first-class, else defaults."""
        have = self.configs.get(name, {})
        return [(key, have[n], SOURCE_CLIENT_METRICS) if n in have else (key, key.default or "", cfg.SOURCE_DEFAULT)
                for n, key in sorted(CONFIGS.items()) if keys is None or n in keys]

    def to_json(self) -> dict[str, dict[str, str]]:
        return {n: dict(c) for n, c in sorted(self.configs.items())}

    def load_json(self, data: Any) -> None:
        for name, configs in dict(data).items():
            self.set(str(name), validate(str(name), {str(k): str(v) for k, v in configs.items()}))
