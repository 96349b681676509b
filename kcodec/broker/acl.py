"""Allow-ACLs per principal on topics and on the cluster, with Kafka's implications.

With no ACLs configured every principal may do everything (Kafka without an authorizer). Once ACLs are
given, a principal may do only what an ACL allows it: DESCRIBE is implied by READ, WRITE, DELETE and
ALTER, DESCRIBE_CONFIGS by ALTER_CONFIGS, and ALL allows everything on its resource. TWO_PHASE_COMMIT
(KIP-939) on a transactional id is implied by ALL only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Union

# Kafka's AclOperation codes; authorized-operations bit fields set bit (1 << code).
OPERATIONS = {"All": 2, "Read": 3, "Write": 4, "Create": 5, "Delete": 6, "Alter": 7, "Describe": 8,
              "ClusterAction": 9, "DescribeConfigs": 10, "AlterConfigs": 11, "IdempotentWrite": 12,
              "TwoPhaseCommit": 15}
TOPIC_OPERATIONS = ("Read", "Write", "Create", "Delete", "Alter", "Describe", "DescribeConfigs", "AlterConfigs")
CLUSTER_OPERATIONS = ("Create", "ClusterAction", "DescribeConfigs", "AlterConfigs", "IdempotentWrite", "Alter",
                      "Describe")
GROUP_OPERATIONS = ("Read", "Delete", "Describe")
TRANSACTIONAL_ID_OPERATIONS = ("Write", "Describe", "TwoPhaseCommit")
_IMPLIES = {"Describe": {"Read", "Write", "Delete", "Alter"}, "DescribeConfigs": {"AlterConfigs"}}
RESOURCE_TYPES = ("topic", "cluster", "group", "transactional_id")
_NAMED = ("topic", "group", "transactional_id")
ANONYMOUS = "User:ANONYMOUS"
CLUSTER_NAME = "kafka-cluster"


def principal_of(user: str) -> str:
    return user if user.startswith("User:") else f"User:{user}"


@dataclass(frozen=True)
class Acl:
    """Allow ``principal`` (``"alice"`` or ``"User:alice"``, ``"*"`` for everyone) to perform ``operation``
    on ``resource_type`` ``"topic"``, ``"group"`` (a consumer group id), ``"transactional_id"`` or ``"cluster"``
    named ``resource``: a literal name, ``"*"`` for all,
    or a prefix ending in ``*`` (``"logs-*"``)."""

    principal: str
    operation: str
    resource_type: str = "topic"
    resource: str = "*"

    def __post_init__(self) -> None:
        if self.operation not in OPERATIONS:
            raise ValueError(f"unknown ACL operation {self.operation!r}; one of {', '.join(OPERATIONS)}")
        if self.resource_type not in RESOURCE_TYPES:
            raise ValueError(f"unknown ACL resource type {self.resource_type!r}; one of {', '.join(RESOURCE_TYPES)}")
        object.__setattr__(self, "principal", principal_of(self.principal))
        if self.resource_type == "cluster":  # Kafka's one cluster resource
            object.__setattr__(self, "resource", CLUSTER_NAME)

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

    def matches(self, principal: str, operation: str, resource_type: str, name: str) -> bool:
        if self.principal not in (principal, "User:*") or self.resource_type != resource_type:
            return False
        if self.operation not in ("All", operation) and self.operation not in _IMPLIES.get(operation, ()):
            return False
        if resource_type == "cluster" or self.resource in ("*", name):
            return True
        return self.resource.endswith("*") and name.startswith(self.resource[:-1])


AclLike = Union[Acl, str]


class Authorizer:
    def __init__(self, acls: Optional[Iterable[AclLike]] = None, super_users: Iterable[str] = ()) -> None:
        self.enabled = acls is not None
        self.acls = [a if isinstance(a, Acl) else Acl.parse(a) for a in (acls or ())]
        self.super_users = {principal_of(u) for u in super_users}

    def allowed(self, principal: str, operation: str, resource_type: str = "topic", name: str = "") -> bool:
        if not self.enabled or principal in self.super_users:
            return True
        return any(a.matches(principal, operation, resource_type, name) for a in self.acls)

    def operations_mask(self, principal: str, resource_type: str, name: str = "") -> int:
        """Kafka's authorized-operations bit field for one resource."""
        ops = {"topic": TOPIC_OPERATIONS, "group": GROUP_OPERATIONS,
               "transactional_id": TRANSACTIONAL_ID_OPERATIONS}.get(resource_type, CLUSTER_OPERATIONS)
        mask = 0
        for op in ops:
            if self.allowed(principal, op, resource_type, name):
                mask |= 1 << OPERATIONS[op]
        return mask


# DescribeAcls wire codes (Kafka's ResourceType, PatternType, AclPermissionType).
WIRE_RESOURCE_TYPES = {"topic": 2, "group": 3, "cluster": 4, "transactional_id": 5}
ANY, MATCH, LITERAL, PREFIXED, ALLOW = 1, 2, 3, 4, 3


def wire_pattern(acl: Acl) -> tuple[str, int]:
    """(resource name, pattern type) as Kafka stores the ACL: ``logs-*`` is PREFIXED ``logs-``."""
    if acl.resource_type != "cluster" and acl.resource != "*" and acl.resource.endswith("*"):
        return acl.resource[:-1], PREFIXED
    return acl.resource, LITERAL


def acl_filter(acl: Acl, resource_type: int, name: Optional[str], pattern: int, principal: Optional[str],
               host: Optional[str], operation: int, permission: int) -> bool:
    """Whether an ACL passes a DescribeAcls filter (ANY matches all; MATCH: the ACLs that apply to ``name``)."""
    acl_name, acl_pattern = wire_pattern(acl)
    if resource_type != ANY and WIRE_RESOURCE_TYPES[acl.resource_type] != resource_type:
        return False
    if pattern == MATCH:
        if name is not None and not (acl_name in ("*", name) or (acl_pattern == PREFIXED and name.startswith(acl_name))):
            return False
    elif pattern != ANY and (pattern != acl_pattern or (name is not None and name != acl_name)):
        return False
    elif pattern == ANY and name is not None and name != acl_name:
        return False
    return ((principal is None or principal == acl.principal) and host in (None, "*")
            and operation in (ANY, OPERATIONS[acl.operation]) and permission in (ANY, ALLOW))
