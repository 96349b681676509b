"""Client quotas (KIP-546: AlterClientQuotas, DescribeClientQuotas): kept and described as Kafka's
controller keeps them (ClientQuotaControlManager, ClientQuotasImage), with its checks and messages. They are
not enforced: nothing is throttled.

An entity is a set of (type, name) pairs of the types user, client-id and ip; a name of None is the
type's default. User and client-id combine, ip stands alone.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from typing import Any, Iterable, Optional

USER, CLIENT_ID, IP = "user", "client-id", "ip"
# Kafka's QuotaConfigs: the keys each kind of entity takes, and whether a value must be whole (LONG, INT)
_USER_OR_CLIENT = {"producer_byte_rate": True, "consumer_byte_rate": True, "request_percentage": False,
                   "controller_mutation_rate": False}
_IP = {"connection_creation_rate": True}
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

Entity = frozenset  # of (entity type, name or None)


class QuotaError(ValueError):
    """A refused alteration or filter: Kafka's error code (INVALID_REQUEST 42, UNSUPPORTED_VERSION 35)
    and message."""

    def __init__(self, message: str, code: int = 42) -> None:
        super().__init__(message)
        self.code = code


def describe_entity(entity: Iterable[tuple[str, Optional[str]]]) -> str:
    """Java's ClientQuotaEntity.toString, for messages."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={n}" for t, n in entity) + "})"


@dataclass
class Op:
    key: str
    value: float
    remove: bool


class ClientQuotas:
    """{entity: {key: value}}; changes come from handlers under the cluster state's lock."""

    def __init__(self) -> None:
        self.entities: dict[Entity, dict[str, float]] = {}

    def __bool__(self) -> bool:
        return bool(self.entities)

    # -- AlterClientQuotas ------------------------------------------------------------------------------
    def alter(self, entity: list[tuple[str, Optional[str]]], ops: list[Op], validate_only: bool) -> None:
        """Apply one entry's ops (all or none), or raise QuotaError. ``entity`` names each type once (Kafka
        reads the request's entity into a map: a type named twice is its last name)."""
        keys = self._keys(entity)
        changes: dict[str, Optional[float]] = {}
        for op in ops:
            if op.key in changes:  # Kafka's controller reports the entity, not the key (it checks twice)
                raise QuotaError(f"Ignoring duplicate entity {describe_entity(entity)}")
            changes[op.key] = None if op.remove else op.value
        for key, value in changes.items():
            if value is not None:
                _check_value(keys, key, value)
        if validate_only:
            return
        current = self.entities.setdefault(Entity(entity), {})
        for key, value in changes.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        if not current:
            del self.entities[Entity(entity)]

    @staticmethod
    def _keys(entity: list[tuple[str, Optional[str]]]) -> dict[str, bool]:
        """The keys the entity may set (Kafka's validateEntity, then configKeysForEntityType)."""
        if not entity:
            raise QuotaError("Invalid empty client quota entity")
        seen: dict[str, Optional[str]] = {}
        for kind, name in entity:
            if kind not in (USER, CLIENT_ID, IP):
                raise QuotaError(f"Unhandled client quota entity type: {kind}")
            if name == "":
                raise QuotaError(f"Empty {kind} not supported")
            seen[kind] = name
        if IP in seen:
            if len(seen) > 1:  # Kafka's message, its missing space included
                raise QuotaError("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
            ip = seen[IP]
            if ip is not None and not _resolvable(ip):
                raise QuotaError(f"{ip} is not a valid IP or resolvable host.")
            return _IP
        return _USER_OR_CLIENT

    # -- DescribeClientQuotas ---------------------------------------------------------------------------
    def describe(self, components: list[tuple[str, int, Optional[str]]], strict: bool) -> list[tuple[Entity, dict[str, float]]]:
        """The entities a filter matches (Kafka's ClientQuotasImage.describe), or QuotaError."""
        exact: dict[str, Optional[str]] = {}
        typed: set[str] = set()
        for kind, match_type, match in components:
            if not kind:
                raise QuotaError("Invalid empty entity type.")
            if kind in exact or kind in typed:
                raise QuotaError(f"Entity type {kind} cannot appear more than once in the filter.")
            if kind not in (USER, CLIENT_ID, IP):
                raise QuotaError(f"Unsupported entity type {kind}", code=35)
            if match_type == MATCH_EXACT:
                if match is None:
                    raise QuotaError("Request specified MATCH_TYPE_EXACT, but set match string to null.")
                exact[kind] = match
            elif match_type == MATCH_DEFAULT:
                if match is not None:
                    raise QuotaError("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
                exact[kind] = None
            elif match_type == MATCH_SPECIFIED:
                if match is not None:
                    raise QuotaError("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
                typed.add(kind)
            else:
                raise QuotaError(f"Unknown match type {match_type}")
        named = set(exact) | typed
        if IP in named and named & {USER, CLIENT_ID}:
            raise QuotaError("Invalid entity filter component combination. IP filter component should not be used "
                             "with user or clientId filter component.")
        out = []
        for entity, values in self.entities.items():
            names = dict(entity)
            if strict and len(names) != len(exact) + len(typed):
                continue
            if all(k in names and names[k] == v for k, v in exact.items()) and typed <= set(names):
                out.append((entity, dict(values)))
        return out

    # -- the state file ---------------------------------------------------------------------------------
    def to_json(self) -> list[dict[str, Any]]:
        return [{"entity": [[t, n] for t, n in sorted(e, key=lambda p: p[0])], "values": dict(sorted(v.items()))}
                for e, v in self.entities.items()]

    def load_json(self, data: list[dict[str, Any]]) -> None:
        self.entities = {Entity((str(t), n) for t, n in e["entity"]): {str(k): float(v) for k, v in e["values"].items()}
                         for e in data}


def _check_value(keys: dict[str, bool], key: str, value: float) -> None:
    """Kafka's validateQuotaKeyValue: a known key, and a whole number where the config is LONG or INT."""
    if key not in keys:
        raise QuotaError(f"Invalid configuration key {key}")
    if keys[key] and not (math.isfinite(value) and value == int(value)):
        raise QuotaError(f"{key} cannot be a fractional value.")  # Kafka 4.4's words


def _resolvable(host: str) -> bool:
    """InetAddress.getByName without a lookup: an IP address literal (names are not resolved here)."""
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False
