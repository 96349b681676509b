"""ACLs per principal on topics, groups, transactional ids and the cluster, with Kafka's decisions.

With no authorizer (no ACLs configured) every principal may do everything. Once it is on, a principal
may do only what an ALLOW ACL allows it and no DENY ACL denies it (a DENY wins, as in Kafka; super users
are never denied). An ALLOW implies as Kafka's does: DESCRIBE is implied by READ, WRITE, DELETE and
ALTER, DESCRIBE_CONFIGS by ALTER_CONFIGS, and ALL allows everything on its resource; a DENY denies its
own operation only (ALL: every one). TWO_PHASE_COMMIT (KIP-939) on a transactional id is implied by ALL
only. An ACL's host is ``*`` or the client's IP address.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Optional, Union

# Kafka's AclOperation codes; authorized-operations bit fields set bit (1 << code).
OPERATIONS = {"All": 2, "Read": 3, "Write": 4, "Create": 5, "Delete": 6, "Alter": 7, "Describe": 8,
              "ClusterAction": 9, "DescribeConfigs": 10, "AlterConfigs": 11, "IdempotentWrite": 12,
              "CreateTokens": 13, "DescribeTokens": 14, "TwoPhaseCommit": 15}
TOPIC_OPERATIONS = ("Read", "Write", "Create", "Delete", "Alter", "Describe", "DescribeConfigs", "AlterConfigs")
CLUSTER_OPERATIONS = ("Create", "ClusterAction", "DescribeConfigs", "AlterConfigs", "IdempotentWrite", "Alter",
                      "Describe")
GROUP_OPERATIONS = ("Read", "Delete", "Describe", "DescribeConfigs", "AlterConfigs")  # Kafka 4: group configs (KIP-848)
TRANSACTIONAL_ID_OPERATIONS = ("Write", "Describe", "TwoPhaseCommit")
_IMPLIES = {"Describe": {"Read", "Write", "Delete", "Alter"}, "DescribeConfigs": {"AlterConfigs"}}
# delegation_token and user ACLs are kept and listed (Kafka accepts them) but no API here consults them
RESOURCE_TYPES = ("topic", "cluster", "group", "transactional_id", "delegation_token", "user")
_NAMED = ("topic", "group", "transactional_id", "delegation_token", "user")
PERMISSIONS = ("Allow", "Deny")
PATTERNS = ("literal", "prefixed")
ANONYMOUS = "User:ANONYMOUS"
CLUSTER_NAME = "kafka-cluster"
_PRINCIPAL_TYPE = re.compile(r"[^:=,]*:")  # a type before the colon; not a DN's CN=...


def principal_of(user: str) -> str:
    """A SASL or TLS identity's principal: ``alice`` -> ``User:alice``."""
    return user if user.startswith("User:") else f"User:{user}"


def acl_principal(principal: str) -> str:
    """An ACL's principal: one with its type (``User:alice``, ``Group:ops``, as CreateAcls gives them)
    stays, a bare name (``alice``, a TLS subject ``CN=alice,O=example``) is a user."""
    return principal if _PRINCIPAL_TYPE.match(principal) else f"User:{principal}"


@dataclass(frozen=True)
class Acl:
    """Allow (or, with ``permission="Deny"``, deny) ``principal`` (``"alice"`` or ``"User:alice"``,
    ``"*"`` for everyone) to perform ``operation`` on ``resource_type`` ``"topic"``, ``"group"`` (a consumer
    group id), ``"transactional_id"`` or ``"cluster"`` named ``resource``: a literal name, ``"*"`` for all,
    or a prefix ending in ``*`` (``"logs-*"``). ``host``: ``"*"`` or the client's IP address. ``pattern``
    is derived from ``resource`` unless given: ``"literal"`` keeps a name that ends in ``*`` literal (as
    CreateAcls may ask), ``"prefixed"`` wants the ``*`` at its end."""

    principal: str
    operation: str
    resource_type: str = "topic"
    resource: str = "*"
    permission: str = "Allow"
    host: str = "*"
    pattern: str = ""

    def __post_init__(self) -> None:
        if self.operation not in OPERATIONS:
            raise ValueError(f"unknown ACL operation {self.operation!r}; one of {', '.join(OPERATIONS)}")
        if self.resource_type not in RESOURCE_TYPES:
            raise ValueError(f"unknown ACL resource type {self.resource_type!r}; one of {', '.join(RESOURCE_TYPES)}")
        if self.permission not in PERMISSIONS:
            raise ValueError(f"unknown ACL permission {self.permission!r}; Allow or Deny")
        object.__setattr__(self, "principal", acl_principal(self.principal))
        pattern = self.pattern or ("prefixed" if self.resource_type != "cluster" and self.resource != "*"
                                   and self.resource.endswith("*") else "literal")
        if pattern not in PATTERNS or (pattern == "prefixed" and not self.resource.endswith("*")):
            raise ValueError(f"ACL pattern {self.pattern!r} with resource {self.resource!r}: literal, or "
                             "prefixed with a resource that ends in *")
        object.__setattr__(self, "pattern", pattern)
        if self.resource_type == "cluster":  # Kafka's one cluster resource
            object.__setattr__(self, "resource", CLUSTER_NAME + ("*" if pattern == "prefixed" else ""))

    @property
    def name(self) -> str:
        """The resource name as Kafka stores it: a prefixed ``logs-*`` is ``logs-``."""
        return self.resource[:-1] if self.pattern == "prefixed" else self.resource

    @classmethod
    def parse(cls, text: str) -> "Acl":
        """``USER:OPERATION:topic|group|transactional_id:NAME`` or ``USER:OPERATION:cluster`` (the
        CLI's --acl form); USER may carry its ``User:`` prefix, as a TLS principal's DN does
        (``User:CN=alice,O=example:Describe:topic:orders``)."""
        user_prefix = "User:" if text.startswith("User:") else ""
        parts = text[len(user_prefix):].split(":", 3)
        parts[0] = user_prefix + parts[0]
        if len(parts) < 3 or (parts[2] in _NAMED and len(parts) != 4):
            raise ValueError(f"ACL {text!r} is not USER:OPERATION:topic|group|transactional_id:NAME or "
                             "USER:OPERATION:cluster")
        return cls(parts[0], parts[1], parts[2], parts[3] if len(parts) == 4 else CLUSTER_NAME)

    def matches(self, principal: str, operation: str, resource_type: str, name: str, host: str = "") -> bool:
        """Whether this ACL decides ``operation`` by ``principal`` from ``host`` on the resource (Kafka's
        StandardAuthorizer: an ALLOW also answers the operations it implies, a DENY only its own)."""
        if self.principal not in (principal, "User:*") or self.host not in ("*", host):
            return False
        if self.operation not in ("All", operation) and (self.permission == "Deny"
                                                         or self.operation not in _IMPLIES.get(operation, ())):
            return False
        return self.applies_to(resource_type, name)

    def applies_to(self, resource_type: str, name: str) -> bool:
        """Whether this ACL is about the resource, whoever and whatever it names."""
        if self.resource_type != resource_type:
            return False
        if resource_type == "cluster":
            return True
        if self.pattern == "prefixed":
            return name.startswith(self.name)
        return self.resource in ("*", name)

    def to_json(self) -> dict[str, str]:
        return {"principal": self.principal, "operation": self.operation, "resource_type": self.resource_type,
                "resource": self.resource, "pattern": self.pattern, "permission": self.permission,
                "host": self.host}


AclLike = Union[Acl, str]


class Authorizer:
    """The ACLs in force: the ones given at start (``acls``; None: no authorizer, everything allowed)
    and the ones CreateAcls added (``created``, a list the cluster state saves), less the ones DeleteAcls
    removed. Start-up ACLs are configuration: a restart brings back one deleted at run time. Changes
    come from handlers under the state's lock and replace ``acls`` whole, so readers never see a list
    that changes under them. ``allow_if_no_acl``: Kafka's allow.everyone.if.no.acl.found, anyone may do
    anything on a resource no ACL is about (whatever principal or operation it names)."""

    def __init__(self, acls: Optional[Iterable[AclLike]] = None, super_users: Iterable[str] = (),
                 created: Optional[list[Acl]] = None, allow_if_no_acl: bool = False) -> None:
        self.enabled = acls is not None
        self.allow_if_no_acl = allow_if_no_acl
        self.configured = tuple(a if isinstance(a, Acl) else Acl.parse(a) for a in (acls or ()))
        self.created: list[Acl] = created if created is not None else []
        self.acls: tuple[Acl, ...] = tuple(dict.fromkeys(self.configured + tuple(self.created)))
        self.super_users = {principal_of(u) for u in super_users}

    def allowed(self, principal: str, operation: str, resource_type: str = "topic", name: str = "",
                host: str = "") -> bool:
        if not self.enabled or principal in self.super_users:
            return True
        if self.allow_if_no_acl and not any(a.applies_to(resource_type, name) for a in self.acls):
            return True
        allowed = False  # an ALLOW is needed, and any DENY that matches wins
        for a in self.acls:
            if a.matches(principal, operation, resource_type, name, host):
                if a.permission != "Allow":
                    return False
                allowed = True
        return allowed

    def operations_mask(self, principal: str, resource_type: str, name: str = "", host: str = "") -> int:
        """Kafka's authorized-operations bit field for one resource."""
        ops = {"topic": TOPIC_OPERATIONS, "group": GROUP_OPERATIONS,
               "transactional_id": TRANSACTIONAL_ID_OPERATIONS}.get(resource_type, CLUSTER_OPERATIONS)
        mask = 0
        for op in ops:
            if self.allowed(principal, op, resource_type, name, host):
                mask |= 1 << OPERATIONS[op]
        return mask

    def add(self, acls: Iterable[Acl]) -> bool:
        """Add ACLs (one already in force is not added twice, as Kafka); whether ``created`` changed."""
        new = [a for a in dict.fromkeys(acls) if a not in self.acls]
        self.acls = self.acls + tuple(new)
        fresh = [a for a in new if a not in self.created]
        self.created.extend(fresh)
        return bool(fresh)

    def remove(self, acls: Iterable[Acl]) -> bool:
        """Remove ACLs from force; whether ``created`` changed."""
        gone = set(acls)
        self.acls = tuple(a for a in self.acls if a not in gone)
        kept = [a for a in self.created if a not in gone]
        changed = len(kept) != len(self.created)
        self.created[:] = kept
        return changed


# Kafka's wire codes: ResourceType, PatternType, AclOperation (above), AclPermissionType.
WIRE_RESOURCE_TYPES = {"topic": 2, "group": 3, "cluster": 4, "transactional_id": 5, "delegation_token": 6,
                       "user": 7}
UNKNOWN, ANY, MATCH, LITERAL, PREFIXED = 0, 1, 2, 3, 4
WIRE_PATTERNS = {"literal": LITERAL, "prefixed": PREFIXED}
WIRE_PERMISSIONS = {"Deny": 2, "Allow": 3}
ALLOW = WIRE_PERMISSIONS["Allow"]


def unknown_in_filter(resource_type: int, pattern: int, operation: int, permission: int) -> bool:
    """Whether a DescribeAcls / DeleteAcls filter has a code Kafka's fromCode makes UNKNOWN (0 or one it
    lacks): Kafka refuses such a request while parsing it."""
    return (resource_type not in (ANY, *WIRE_RESOURCE_TYPES.values()) or pattern not in (ANY, MATCH, LITERAL, PREFIXED)
            or operation not in (ANY, *OPERATIONS.values()) or permission not in (ANY, *WIRE_PERMISSIONS.values()))


def wire_pattern(acl: Acl) -> tuple[str, int]:
    """(resource name, pattern type) as Kafka stores the ACL: ``logs-*`` is PREFIXED ``logs-``."""
    return acl.name, WIRE_PATTERNS[acl.pattern]


def acl_filter(acl: Acl, resource_type: int, name: Optional[str], pattern: int, principal: Optional[str],
               host: Optional[str], operation: int, permission: int) -> bool:
    """Whether an ACL passes a DescribeAcls / DeleteAcls filter (Kafka's AclBindingFilter: ANY matches
    all; MATCH: the ACLs that apply to ``name``, the literal one, ``*`` and the prefixes of it)."""
    acl_name, acl_pattern = wire_pattern(acl)
    if resource_type != ANY and WIRE_RESOURCE_TYPES[acl.resource_type] != resource_type:
        return False
    if pattern == MATCH:
        if name is not None and not (name.startswith(acl_name) if acl_pattern == PREFIXED else acl_name in ("*", name)):
            return False
    elif (pattern != ANY and pattern != acl_pattern) or (name is not None and name != acl_name):
        return False
    return ((principal is None or principal == acl.principal) and (host is None or host == acl.host)
            and operation in (ANY, OPERATIONS[acl.operation])
            and permission in (ANY, WIRE_PERMISSIONS[acl.permission]))
